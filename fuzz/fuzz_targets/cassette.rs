//! A cassette file (recorded provider exchanges, replayed by tests and `rein op replay`): a
//! file that does not read is refused naming its line; one that reads serves its questions.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_model::cassette::ReplayTransport;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match ReplayTransport::from_jsonl(text) {
        Ok(replay) => {
            let _ = replay.questions();
        }
        Err(e) => assert!(e.to_string().contains("cassette line"), "{e}"),
    }
});
