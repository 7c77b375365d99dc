//! rein's configuration file (`rein.toml`): it reads, or is refused with an error naming the
//! file; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_operation::settings::Settings;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = Settings::parse(Path::new("rein.toml"), text) {
        assert!(e.to_string().contains("rein.toml"), "{e}");
    }
});
