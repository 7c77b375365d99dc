//! A provider's whole (non-streamed) answer and its error answer: the first byte picks the
//! protocol, the next two the HTTP status, the rest is the body. Neither reading may panic, and
//! an error answer is always classified with a message a person can read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_model::Protocol;

fuzz_target!(|data: &[u8]| {
    let [which, hi, lo, body @ ..] = data else {
        return;
    };
    let protocol = Protocol::ALL[usize::from(*which) % Protocol::ALL.len()];
    let _events = protocol.parse_body(body);
    let status = 400 + u16::from_be_bytes([*hi, *lo]) % 200;
    let headers = [(
        "retry-after".to_owned(),
        String::from_utf8_lossy(body).into_owned(),
    )];
    let error = protocol.http_error(status, &headers, body);
    assert!(
        !error.to_string().trim().is_empty(),
        "{protocol:?} {status}: an error without a message"
    );
});
