//! Parameter names a provider refuses, renamed on the way out and back on the way in. Which
//! names a protocol takes is its [`super::wire::Wire::property_names`] (Anthropic: letters,
//! digits, `_`, `.` and `-`, at most 64 long, [`anthropic_key`]); MCP servers name parameters
//! as they like (`$filter`, `@type`, `名前`).
//! Such a name is sent as a safe one (its safe characters, then a hash of the original), the
//! earlier calls in the history are sent with the same names, and the arguments of the
//! model's calls come back under the names the tool declared: the tool and its validator
//! never see the wire names.

use super::Protocol;
use crate::event::ModelEvent;
use crate::request::ChatRequest;
use rein_core::message::Message;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// The longest property name Anthropic takes.
const MAX_KEY_LEN: usize = 64;

/// Whether Anthropic takes `key` as a tool's top-level property name.
pub(crate) fn anthropic_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// FNV-1a of `s`, 32 bits: a short, stable suffix telling renamed keys apart.
fn hash(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The wire name of a refused `key`: its safe characters (at most 48) and a hash of it.
fn safe_key(key: &str) -> String {
    let kept: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .take(48)
        .collect();
    let kept = if kept.is_empty() { "p".into() } else { kept };
    format!("{kept}_{:08x}", hash(key))
}

/// Renamed keys per tool, and the calls whose arguments are being gathered to be put back.
#[derive(Debug, Default)]
pub struct KeyMap {
    /// Wire tool name → (wire key, declared key).
    tools: HashMap<String, Vec<(String, String)>>,
    /// Calls of a renamed tool in the response: index → (tool, arguments so far).
    open: HashMap<u32, (String, String)>,
}

impl KeyMap {
    /// The renames `req` needs on `protocol`, or `None` when it sends every name as it is.
    pub fn of(protocol: Protocol, req: &ChatRequest) -> Option<KeyMap> {
        let allowed = protocol.wire().property_names()?;
        let mut tools = HashMap::new();
        for t in &req.tools {
            let Some(props) = t.parameters["properties"].as_object() else {
                continue;
            };
            let renamed: Vec<(String, String)> = props
                .keys()
                .filter(|k| !allowed(k))
                .map(|k| (safe_key(k), k.clone()))
                .collect();
            if !renamed.is_empty() {
                tools.insert(t.name.clone(), renamed);
            }
        }
        (!tools.is_empty()).then(|| KeyMap {
            tools,
            open: HashMap::new(),
        })
    }

    /// `req` as sent: the renamed tools' properties and required names, and the arguments of
    /// their earlier calls, under the wire names.
    pub fn outgoing(&self, req: &ChatRequest) -> ChatRequest {
        let mut out = req.clone();
        for t in &mut out.tools {
            let Some(renamed) = self.tools.get(&t.name) else {
                continue;
            };
            let to_wire = |k: &str| {
                renamed
                    .iter()
                    .find(|(_, declared)| declared == k)
                    .map(|(wire, _)| wire.clone())
            };
            if let Some(props) = t.parameters["properties"].as_object_mut() {
                *props = std::mem::take(props)
                    .into_iter()
                    .map(|(k, v)| (to_wire(&k).unwrap_or(k), v))
                    .collect();
            }
            if let Some(required) = t.parameters["required"].as_array_mut() {
                for r in required.iter_mut() {
                    if let Some(wire) = r.as_str().and_then(to_wire) {
                        *r = Value::String(wire);
                    }
                }
            }
        }
        out.messages = req
            .messages
            .iter()
            .map(|m| self.outgoing_calls(m).unwrap_or_else(|| Arc::clone(m)))
            .collect();
        out
    }

    /// `m` with its calls of renamed tools carrying wire names, if it has any.
    fn outgoing_calls(&self, m: &Arc<Message>) -> Option<Arc<Message>> {
        let touched = m
            .tool_calls
            .iter()
            .any(|c| self.tools.contains_key(&super::wire_name(c)));
        if !touched {
            return None;
        }
        let mut m = Message::clone(m);
        for c in &mut m.tool_calls {
            if let Some(renamed) = self.tools.get(&super::wire_name(c)) {
                let args = rename(&c.arguments, |k| {
                    renamed
                        .iter()
                        .find(|(_, declared)| declared == k)
                        .map(|(wire, _)| wire.as_str())
                });
                c.arguments = args.into();
            }
        }
        Some(Arc::new(m))
    }

    /// Forget calls gathered by an attempt that failed (the next one starts over).
    pub fn restart(&mut self) {
        self.open.clear();
    }

    /// `events` with the arguments of renamed tools' calls under their declared names: such
    /// a call's fragments are held until it ends, then sent whole.
    pub fn incoming(&mut self, events: Vec<ModelEvent>) -> Vec<ModelEvent> {
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            match e {
                ModelEvent::ToolCallStart {
                    index, ref name, ..
                } if self.tools.contains_key(name) => {
                    self.open.insert(index, (name.clone(), String::new()));
                    out.push(e);
                }
                ModelEvent::ToolCallDelta { index, arguments } => match self.open.get_mut(&index) {
                    Some((_, gathered)) => gathered.push_str(&arguments),
                    None => out.push(ModelEvent::ToolCallDelta { index, arguments }),
                },
                ModelEvent::ToolCallEnd { index } => {
                    if let Some((tool, gathered)) = self.open.remove(&index) {
                        let renamed = self.tools.get(&tool).map(Vec::as_slice).unwrap_or(&[]);
                        let arguments = rename(&gathered, |k| {
                            renamed
                                .iter()
                                .find(|(wire, _)| wire == k)
                                .map(|(_, declared)| declared.as_str())
                        });
                        out.push(ModelEvent::ToolCallDelta { index, arguments });
                    }
                    out.push(ModelEvent::ToolCallEnd { index });
                }
                other => out.push(other),
            }
        }
        out
    }
}

/// `arguments` (a JSON object's text) with its top-level keys renamed by `to`; text that is
/// not an object comes back unchanged (the validator reports it).
fn rename<'a>(arguments: &str, to: impl Fn(&str) -> Option<&'a str>) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => {
            let renamed: Map<String, Value> = m
                .into_iter()
                .map(|(k, v)| (to(&k).map(str::to_owned).unwrap_or(k), v))
                .collect();
            Value::Object(renamed).to_string()
        }
        _ => arguments.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ToolSpec;
    use rein_core::message::ToolCall;
    use serde_json::json;

    fn request() -> ChatRequest {
        let call = ToolCall::new(
            "c0",
            "crm",
            "find",
            r#"{"名前":"Ada","$filter":"x","limit":2}"#,
        );
        let mut a = Message::assistant("");
        a.tool_calls.push(call);
        let mut req = ChatRequest::new(
            "claude",
            vec![Arc::new(Message::user("find Ada")), Arc::new(a)],
        );
        req.tools = vec![
            ToolSpec {
                name: "crm__find".into(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {"名前": {"type": "string"}, "$filter": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["名前"]}),
            },
            ToolSpec {
                name: "calc__eval".into(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            },
        ];
        req
    }

    #[test]
    fn refused_keys_go_out_renamed_and_come_back_as_declared() {
        let req = request();
        assert!(KeyMap::of(Protocol::OpenaiChat, &req).is_none());
        let mut keys = KeyMap::of(Protocol::Anthropic, &req).unwrap();
        let out = keys.outgoing(&req);
        let props = out.tools[0].parameters["properties"].as_object().unwrap();
        assert!(props.keys().all(|k| anthropic_key(k)), "{props:?}");
        assert!(props.contains_key("limit"));
        let wire_name = safe_key("名前");
        assert_eq!(out.tools[0].parameters["required"], json!([wire_name]));
        assert_eq!(
            out.tools[1], req.tools[1],
            "a tool with safe keys is untouched"
        );
        let sent: Value = serde_json::from_str(&out.messages[1].tool_calls[0].arguments).unwrap();
        assert_eq!(sent[&wire_name], "Ada");
        assert_eq!(sent["limit"], 2);
        // The model answers with the wire names in pieces; the call comes back whole, declared.
        let back = keys.incoming(vec![
            ModelEvent::ToolCallStart {
                index: 0,
                id: Some("t1".into()),
                name: "crm__find".into(),
                thought_signature: None,
            },
            ModelEvent::ToolCallDelta {
                index: 0,
                arguments: format!(r#"{{"{wire_name}":"#),
            },
            ModelEvent::ToolCallDelta {
                index: 0,
                arguments: r#""Grace"}"#.into(),
            },
            ModelEvent::ToolCallEnd { index: 0 },
        ]);
        assert_eq!(back.len(), 3, "{back:?}");
        let ModelEvent::ToolCallDelta { arguments, .. } = &back[1] else {
            panic!("{back:?}")
        };
        assert_eq!(arguments, r#"{"名前":"Grace"}"#);
    }

    #[test]
    fn wire_keys_are_safe_and_distinct() {
        for k in ["$filter", "@type", "名前", "a b", &"x".repeat(80), ""] {
            assert!(anthropic_key(&safe_key(k)), "{k} -> {}", safe_key(k));
        }
        assert_ne!(safe_key("a b"), safe_key("a\tb"));
    }
}
