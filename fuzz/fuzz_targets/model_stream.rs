//! A provider's streamed response, as any server (or anything between) could send it: the
//! first byte picks the protocol, the second where the body is cut into two pieces, the rest is
//! the body. The framing decoder and that protocol's parser must not panic, and must give the
//! same events whether the body arrives whole or cut anywhere (a network cuts where it likes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rein_model::framing::Decoder;
use rein_model::{ModelEvent, Protocol};

fn events(protocol: Protocol, pieces: &[&[u8]]) -> Vec<ModelEvent> {
    let mut decoder = Decoder::new(protocol.framing());
    let mut parser = protocol.parser();
    let mut out = Vec::new();
    for piece in pieces {
        decoder.push(piece, &mut |frame| parser.frame(frame, &mut out));
    }
    decoder.finish(&mut |frame| parser.frame(frame, &mut out));
    parser.finish(&mut out);
    out
}

fuzz_target!(|data: &[u8]| {
    let [which, cut, body @ ..] = data else {
        return;
    };
    let protocol = Protocol::ALL[usize::from(*which) % Protocol::ALL.len()];
    let at = if body.is_empty() {
        0
    } else {
        usize::from(*cut) % body.len()
    };
    let (head, tail) = body.split_at(at);
    let whole = events(protocol, &[body]);
    let cut = events(protocol, &[head, tail]);
    assert_eq!(
        whole, cut,
        "{protocol:?}: cutting the body at {at} changed its events"
    );
    // Byte by byte: every line and code point split.
    let bytes: Vec<&[u8]> = body.chunks(1).collect();
    assert_eq!(
        whole,
        events(protocol, &bytes),
        "{protocol:?}: byte by byte"
    );
});
