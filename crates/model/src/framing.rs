//! Byte framing: Server-Sent Events and newline-delimited JSON, fed in arbitrary pieces.
//!
//! Hand-written rather than `eventsource-stream` for two reasons: Gemini sends mid-stream
//! errors as bare JSON objects without `data:` (an SSE parser must drop those lines, and we
//! must not), and the relay path needs to parse hundreds of MB/s with one buffer per stream.
//! Lines end at `\n` (a trailing `\r` is stripped, so CRLF split across pieces is handled);
//! a line is decoded as UTF-8 only once complete, so split code points are handled too.

/// One framed unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// An SSE event.
    Event {
        /// `event:` name, if any.
        event: Option<String>,
        /// `data:` lines joined with `\n`.
        data: String,
    },
    /// A JSON document outside SSE framing (NDJSON line, or a bare JSON error in an SSE body).
    Json(String),
    /// Bytes that are not valid UTF-8.
    Invalid(String),
}

/// Which framing a body uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `text/event-stream`.
    Sse,
    /// `application/x-ndjson`.
    Ndjson,
}

/// Incremental decoder.
#[derive(Debug)]
pub struct Decoder {
    framing: Framing,
    buf: Vec<u8>,
    event: Option<String>,
    data: String,
    has_data: bool,
    raw: String,
    raw_depth: i32,
}

/// Brace depth change of a JSON line, ignoring braces inside strings.
fn depth_delta(line: &str, mut in_string: bool) -> (i32, bool) {
    let mut d = 0;
    let mut escaped = false;
    for b in line.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => d += 1,
                b'}' | b']' => d -= 1,
                _ => {}
            }
        }
    }
    (d, in_string)
}

impl Decoder {
    /// A decoder for `framing`.
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            buf: Vec::with_capacity(8 * 1024),
            event: None,
            data: String::new(),
            has_data: false,
            raw: String::new(),
            raw_depth: 0,
        }
    }

    /// Feed bytes; complete frames are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(pos) = memchr(b'\n', &self.buf[start..]) {
            let end = start + pos;
            let line_end = if end > start && self.buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            let line = std::mem::take(&mut self.buf);
            self.line(&line[start..line_end], out);
            self.buf = line;
            start = end + 1;
        }
        if start > 0 {
            self.buf.drain(..start);
        }
    }

    /// End of body: flush what is pending (an unterminated last line or event).
    pub fn finish(&mut self, out: &mut Vec<Frame>) {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let trimmed = rest.strip_suffix(b"\r").unwrap_or(&rest);
            self.line(trimmed, out);
        }
        if self.framing == Framing::Sse {
            self.dispatch(out);
        }
        if !self.raw.trim().is_empty() {
            out.push(Frame::Json(std::mem::take(&mut self.raw)));
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Frame>) {
        if self.has_data {
            out.push(Frame::Event {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
            });
            self.has_data = false;
        }
        self.event = None;
    }

    fn line(&mut self, bytes: &[u8], out: &mut Vec<Frame>) {
        let Ok(line) = std::str::from_utf8(bytes) else {
            out.push(Frame::Invalid(String::from_utf8_lossy(bytes).into_owned()));
            return;
        };
        if self.framing == Framing::Ndjson {
            if !line.trim().is_empty() {
                out.push(Frame::Json(line.to_owned()));
            }
            return;
        }
        if self.raw_depth > 0 || (line.starts_with('{') || line.starts_with('[')) {
            // A bare JSON document inside an SSE body (Gemini errors), possibly multi-line.
            let (d, _) = depth_delta(line, false);
            self.raw.push_str(line);
            self.raw.push('\n');
            self.raw_depth += d;
            if self.raw_depth <= 0 {
                self.raw_depth = 0;
                out.push(Frame::Json(std::mem::take(&mut self.raw)));
            }
            return;
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|b| *b == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(framing: Framing, body: &[u8], piece: usize) -> Vec<Frame> {
        let mut d = Decoder::new(framing);
        let mut out = Vec::new();
        for chunk in body.chunks(piece) {
            d.push(chunk, &mut out);
        }
        d.finish(&mut out);
        out
    }

    #[test]
    fn sse_events_survive_any_split() {
        let body = "event: a\r\ndata: {\"x\":\"é👋\"}\r\n\r\n: comment\n\ndata: l1\ndata: l2\n\n{\"error\": {\n  \"code\": 500\n}\n}\ndata: tail".as_bytes();
        let want = decode(Framing::Sse, body, body.len());
        assert_eq!(
            want,
            vec![
                Frame::Event {
                    event: Some("a".into()),
                    data: "{\"x\":\"é👋\"}".into()
                },
                Frame::Event {
                    event: None,
                    data: "l1\nl2".into()
                },
                Frame::Json("{\"error\": {\n  \"code\": 500\n}\n}\n".into()),
                Frame::Event {
                    event: None,
                    data: "tail".into()
                },
            ]
        );
        for piece in 1..8 {
            assert_eq!(decode(Framing::Sse, body, piece), want, "piece {piece}");
        }
    }

    #[test]
    fn ndjson_lines() {
        let body = b"{\"a\":1}\n\n{\"b\":2}";
        assert_eq!(
            decode(Framing::Ndjson, body, 3),
            vec![
                Frame::Json("{\"a\":1}".into()),
                Frame::Json("{\"b\":2}".into())
            ]
        );
    }
}
