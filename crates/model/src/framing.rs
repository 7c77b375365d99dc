//! Byte framing: Server-Sent Events and newline-delimited JSON, fed in arbitrary pieces.
//!
//! Hand-written rather than `eventsource-stream` for two reasons: Gemini sends mid-stream
//! errors as bare JSON objects without `data:` (an SSE parser must drop those lines, and we
//! must not), and the relay path needs to parse hundreds of MB/s with one buffer per stream.
//! Lines end at `\n` (a trailing `\r` is stripped, so CRLF split across pieces is handled);
//! a line is decoded as UTF-8 only once complete, so split code points are handled too.

/// One framed unit, borrowed from the decoder's buffers for the duration of a callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// An SSE event.
    Event {
        /// `event:` name, if any.
        event: Option<&'a str>,
        /// `data:` lines joined with `\n`.
        data: &'a str,
    },
    /// A JSON document outside SSE framing (NDJSON line, or a bare JSON error in an SSE body).
    Json(&'a str),
    /// Bytes that are not valid UTF-8.
    Invalid(&'a [u8]),
}

/// Which framing a body uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `text/event-stream`.
    Sse,
    /// `application/x-ndjson`.
    Ndjson,
}

/// Incremental decoder. Its buffers are reused across frames, so steady-state framing does
/// not allocate.
#[derive(Debug)]
pub struct Decoder {
    framing: Framing,
    buf: Vec<u8>,
    event: String,
    has_event: bool,
    data: String,
    has_data: bool,
    raw: String,
    raw_depth: i32,
}

/// Brace depth change of a JSON line, ignoring braces inside strings.
fn depth_delta(line: &str) -> i32 {
    let mut d = 0;
    let (mut in_string, mut escaped) = (false, false);
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
    d
}

impl Decoder {
    /// A decoder for `framing`.
    pub fn new(framing: Framing) -> Self {
        Self {
            framing,
            buf: Vec::with_capacity(8 * 1024),
            event: String::new(),
            has_event: false,
            data: String::with_capacity(1024),
            has_data: false,
            raw: String::new(),
            raw_depth: 0,
        }
    }

    /// Feed bytes; each complete frame is passed to `on_frame`.
    pub fn push(&mut self, bytes: &[u8], on_frame: &mut dyn FnMut(Frame<'_>)) {
        self.buf.extend_from_slice(bytes);
        // Lines borrow from the buffer while the decoder's other fields change.
        let buf = std::mem::take(&mut self.buf);
        let mut start = 0;
        while let Some(pos) = memchr(b'\n', &buf[start..]) {
            let end = start + pos;
            let line_end = if end > start && buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            self.line(&buf[start..line_end], on_frame);
            start = end + 1;
        }
        self.buf = buf;
        if start > 0 {
            self.buf.drain(..start);
        }
    }

    /// End of body: flush what is pending (an unterminated last line or event).
    pub fn finish(&mut self, on_frame: &mut dyn FnMut(Frame<'_>)) {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let trimmed = rest.strip_suffix(b"\r").unwrap_or(&rest);
            self.line(trimmed, on_frame);
        }
        if self.framing == Framing::Sse {
            self.dispatch(on_frame);
        }
        if !self.raw.trim().is_empty() {
            on_frame(Frame::Json(&self.raw));
            self.raw.clear();
        }
    }

    fn dispatch(&mut self, on_frame: &mut dyn FnMut(Frame<'_>)) {
        if self.has_data {
            let event = self.has_event.then_some(self.event.as_str());
            on_frame(Frame::Event {
                event,
                data: &self.data,
            });
            self.data.clear();
            self.has_data = false;
        }
        self.event.clear();
        self.has_event = false;
    }

    fn line(&mut self, bytes: &[u8], on_frame: &mut dyn FnMut(Frame<'_>)) {
        let Ok(line) = std::str::from_utf8(bytes) else {
            on_frame(Frame::Invalid(bytes));
            return;
        };
        if self.framing == Framing::Ndjson {
            if !line.trim().is_empty() {
                on_frame(Frame::Json(line));
            }
            return;
        }
        if self.raw_depth > 0 || line.starts_with('{') || line.starts_with('[') {
            // A bare JSON document inside an SSE body (Gemini errors), possibly multi-line.
            self.raw.push_str(line);
            self.raw.push('\n');
            self.raw_depth += depth_delta(line);
            if self.raw_depth <= 0 {
                self.raw_depth = 0;
                on_frame(Frame::Json(&self.raw));
                self.raw.clear();
            }
            return;
        }
        if line.is_empty() {
            self.dispatch(on_frame);
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
            "event" => {
                self.event.clear();
                self.event.push_str(value);
                self.has_event = true;
            }
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

    #[derive(Debug, PartialEq)]
    enum Owned {
        Event(Option<String>, String),
        Json(String),
    }

    fn decode(framing: Framing, body: &[u8], piece: usize) -> Vec<Owned> {
        let mut d = Decoder::new(framing);
        let mut out = Vec::new();
        let mut sink = |f: Frame<'_>| match f {
            Frame::Event { event, data } => {
                out.push(Owned::Event(event.map(str::to_owned), data.to_owned()))
            }
            Frame::Json(j) => out.push(Owned::Json(j.to_owned())),
            Frame::Invalid(_) => panic!("invalid"),
        };
        for chunk in body.chunks(piece) {
            d.push(chunk, &mut sink);
        }
        d.finish(&mut sink);
        out
    }

    #[test]
    fn sse_events_survive_any_split() {
        let body = "event: a\r\ndata: {\"x\":\"é👋\"}\r\n\r\n: comment\n\ndata: l1\ndata: l2\n\n{\"error\": {\n  \"code\": 500\n}\n}\ndata: tail".as_bytes();
        let want = decode(Framing::Sse, body, body.len());
        assert_eq!(
            want,
            vec![
                Owned::Event(Some("a".into()), "{\"x\":\"é👋\"}".into()),
                Owned::Event(None, "l1\nl2".into()),
                Owned::Json("{\"error\": {\n  \"code\": 500\n}\n}\n".into()),
                Owned::Event(None, "tail".into()),
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
                Owned::Json("{\"a\":1}".into()),
                Owned::Json("{\"b\":2}".into())
            ]
        );
    }
}
