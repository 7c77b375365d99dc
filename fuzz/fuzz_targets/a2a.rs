//! What another A2A agent sends: a stream item (or push notification body) and a request's
//! params. What reads must write back to JSON that reads again to the same JSON (nothing
//! read is lost or invented on the way through rein).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_operation::a2a::wire::{SendMessageRequest, StreamResponse, Task};
use serde::Serialize;
use serde::de::DeserializeOwned;

fn round_trip<T: Serialize + DeserializeOwned>(data: &[u8]) {
    let Ok(read) = serde_json::from_slice::<T>(data) else {
        return;
    };
    let Ok(written) = serde_json::to_value(&read) else {
        panic!("{}: read but cannot be written", std::any::type_name::<T>());
    };
    let again: T = match serde_json::from_value(written.clone()) {
        Ok(v) => v,
        Err(e) => panic!(
            "{}: what rein writes does not read: {e}\n{written}",
            std::any::type_name::<T>()
        ),
    };
    let Ok(rewritten) = serde_json::to_value(&again) else {
        panic!("{}: cannot be written again", std::any::type_name::<T>());
    };
    assert_eq!(written, rewritten, "{}", std::any::type_name::<T>());
}

fuzz_target!(|data: &[u8]| {
    round_trip::<StreamResponse>(data);
    round_trip::<SendMessageRequest>(data);
    round_trip::<Task>(data);
});
