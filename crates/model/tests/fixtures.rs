//! Conformance: every provider fixture (a raw response body plus its expected normalized
//! result) is parsed from random 1-7 byte pieces, so split UTF-8, split CRLF and split JSON
//! are all exercised, and the result must match `expected` field by field.

use crate::common;

use common::{Fixture, check, fixtures, protocol_of};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rein_model::framing::Decoder;
use rein_model::{Collector, ModelResponse};

fn parse(f: &Fixture, seed: u64) -> ModelResponse {
    let protocol = protocol_of(&f.meta);
    let mut c = Collector::new();
    let status = f.meta["response"]["status"].as_u64().unwrap() as u16;
    let framing = f.meta["response"]["framing"].as_str().unwrap();
    if !(200..300).contains(&status) {
        let headers: Vec<(String, String)> = f.meta["response"]["headers"]
            .as_object()
            .map(|h| {
                h.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let error = protocol.http_error(status, &headers, &f.body);
        c.push(&rein_model::ModelEvent::Error { error });
        return c.finish();
    }
    if framing == "json" {
        for e in protocol.parse_body(&f.body) {
            c.push(&e);
        }
        return c.finish();
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut decoder = Decoder::new(protocol.framing());
    let mut parser = protocol.parser();
    let mut events = Vec::new();
    let mut on_frame = |frame: rein_model::framing::Frame<'_>| parser.frame(frame, &mut events);
    let mut rest: &[u8] = &f.body;
    while !rest.is_empty() {
        let n = rng.random_range(1..=7).min(rest.len());
        decoder.push(&rest[..n], &mut on_frame);
        rest = &rest[n..];
    }
    decoder.finish(&mut on_frame);
    parser.finish(&mut events);
    for e in &events {
        c.push(e);
    }
    c.finish()
}

#[test]
fn every_fixture_normalizes_to_its_expected_result_from_any_split() {
    let all = fixtures();
    assert_eq!(all.len(), 18, "fixture count");
    let mut failures = Vec::new();
    for f in &all {
        for seed in 0..12 {
            let bad = check(f, &parse(f, seed));
            if !bad.is_empty() {
                failures.push(format!("{} (seed {seed}):\n  {}", f.id, bad.join("\n  ")));
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixtures differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Adding a protocol is not done until a recorded exchange in it is here.
#[test]
fn every_protocol_has_a_recorded_fixture() {
    let spoken: std::collections::HashSet<rein_model::Protocol> =
        fixtures().iter().map(|f| protocol_of(&f.meta)).collect();
    for p in rein_model::Protocol::ALL {
        assert!(
            spoken.contains(&p),
            "no fixture under tests/fixtures/providers speaks {p:?}"
        );
    }
}
