//! Tool parameter schemas in the subset a provider takes. Tools and MCP servers declare full
//! JSON Schema (schemas generated from Python or TypeScript models commonly put their types in
//! `$defs` and point at them with `$ref`); Gemini's `parameters` is an OpenAPI subset without
//! references. [`inline_refs`] replaces every local reference by what it names, so nothing
//! dangles once `$defs` is dropped; a type that contains itself is cut at its second
//! appearance on a path, where an open object describing it stands instead. [`object_root`]
//! gives a schema that declares no type the object root every provider requires of a tool's
//! parameters. Property names are the tool's words, never keywords: a parameter may be named
//! `definitions` or `const`.

use serde_json::{Map, Value};

/// How deep references are followed before a recursive type is cut, whatever the path.
const MAX_DEPTH: usize = 16;

/// `schema` with every `#/$defs/…` and `#/definitions/…` reference replaced by its target
/// (see the module docs). References to anything else are dropped with their keyword.
pub fn inline_refs(schema: &Value) -> Value {
    let defs = definitions(schema);
    let mut stack = Vec::new();
    resolve(schema, &defs, &mut stack)
}

fn definitions(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(m)) = schema.get(key) {
            for (k, v) in m {
                defs.insert(format!("#/{key}/{k}"), v.clone());
            }
        }
    }
    defs
}

fn resolve(v: &Value, defs: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    match v {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                let Some(def) = defs.get(target) else {
                    // Not a local definition: nothing to inline; keep what else it says.
                    let rest: Map<String, Value> = map
                        .iter()
                        .filter(|(k, _)| k.as_str() != "$ref")
                        .map(|(k, v)| (k.clone(), resolve(v, defs, stack)))
                        .collect();
                    return Value::Object(rest);
                };
                let name = target.rsplit('/').next().unwrap_or(target).to_owned();
                if stack.contains(target) || stack.len() >= MAX_DEPTH {
                    let mut cut = Map::new();
                    cut.insert("type".into(), Value::String("object".into()));
                    cut.insert(
                        "description".into(),
                        Value::String(format!("a {name} (the same shape as its parent)")),
                    );
                    return Value::Object(cut);
                }
                stack.push(target.clone());
                let mut inlined = match resolve(def, defs, stack) {
                    Value::Object(m) => m,
                    other => {
                        stack.pop();
                        return other;
                    }
                };
                stack.pop();
                // Keywords beside the reference (a description) refine what it names.
                for (k, v) in map {
                    if k != "$ref" {
                        inlined.insert(k.clone(), resolve(v, defs, stack));
                    }
                }
                return Value::Object(inlined);
            }
            Value::Object(
                map.iter()
                    .filter(|(k, _)| !matches!(k.as_str(), "$defs" | "definitions"))
                    .map(|(k, v)| {
                        let v = match (k.as_str(), v) {
                            ("properties", Value::Object(props)) => Value::Object(
                                props
                                    .iter()
                                    .map(|(name, p)| (name.clone(), resolve(p, defs, stack)))
                                    .collect(),
                            ),
                            _ => resolve(v, defs, stack),
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| resolve(v, defs, stack)).collect())
        }
        other => other.clone(),
    }
}

/// `schema` as a tool's parameters: every provider requires an object at the root. A schema
/// that declares no type (MCP servers send `{}` for a tool without arguments, or a root with
/// `properties` only) gets `type: object`; anything else is sent as it is.
pub fn object_root(schema: &Value) -> Value {
    let mut out = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    if !out.contains_key("type") {
        out.insert("type".into(), Value::String("object".into()));
    }
    Value::Object(out)
}

/// Whether a tool's parameters declare no parameter at all (no or empty `properties`).
pub fn takes_nothing(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
}

/// Whether `schema` still holds a `$ref` anywhere.
pub fn has_ref(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("$ref") || m.values().any(has_ref),
        Value::Array(a) => a.iter().any(has_ref),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A schema as pydantic writes one for a model with a nested type, an optional field, a
    /// literal and a recursive tree.
    fn pydantic() -> Value {
        json!({
            "$defs": {
                "Address": {
                    "properties": {"city": {"type": "string"}, "zip": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
                    "required": ["city"], "title": "Address", "type": "object"
                },
                "Node": {
                    "properties": {"name": {"type": "string"}, "children": {"items": {"$ref": "#/$defs/Node"}, "type": "array"}},
                    "required": ["name"], "type": "object"
                }
            },
            "properties": {
                "home": {"$ref": "#/$defs/Address", "description": "Where they live"},
                "kind": {"const": "person"},
                "tree": {"$ref": "#/$defs/Node"}
            },
            "required": ["home"],
            "type": "object"
        })
    }

    #[test]
    fn references_are_inlined_and_nothing_dangles() {
        let out = inline_refs(&pydantic());
        assert!(!has_ref(&out), "{out}");
        assert!(out.get("$defs").is_none());
        assert_eq!(
            out["properties"]["home"]["properties"]["city"]["type"],
            "string"
        );
        assert_eq!(out["properties"]["home"]["description"], "Where they live");
        assert_eq!(out["properties"]["kind"]["const"], "person");
    }

    #[test]
    fn a_recursive_type_is_cut_at_its_second_appearance() {
        let out = inline_refs(&pydantic());
        let tree = &out["properties"]["tree"];
        assert_eq!(tree["properties"]["name"]["type"], "string");
        let child = &tree["properties"]["children"]["items"];
        assert_eq!(child["type"], "object");
        assert!(child.get("properties").is_none(), "{child}");
        assert!(child["description"].as_str().unwrap().contains("Node"));
    }

    #[test]
    fn parameters_named_like_keywords_are_kept() {
        let s = json!({
            "$defs": {"Term": {"type": "string"}},
            "type": "object",
            "properties": {
                "definitions": {"type": "array", "items": {"$ref": "#/$defs/Term"}},
                "$defs": {"type": "string"}
            }
        });
        let out = inline_refs(&s);
        assert_eq!(out["properties"]["definitions"]["items"]["type"], "string");
        assert_eq!(out["properties"]["$defs"]["type"], "string");
        assert!(out.get("$defs").is_none());
    }

    #[test]
    fn a_root_without_a_type_becomes_an_object() {
        assert_eq!(object_root(&json!({})), json!({"type": "object"}));
        assert_eq!(
            object_root(&json!({"properties": {"q": {"type": "string"}}})),
            json!({"type": "object", "properties": {"q": {"type": "string"}}})
        );
        let typed = json!({"type": "object", "properties": {}, "required": []});
        assert_eq!(object_root(&typed), typed);
        assert!(takes_nothing(&typed) && takes_nothing(&json!({"type": "object"})));
        assert!(!takes_nothing(&json!({"properties": {"q": {}}})));
    }

    #[test]
    fn a_schema_without_references_is_unchanged() {
        let s = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        assert_eq!(inline_refs(&s), s);
    }
}
