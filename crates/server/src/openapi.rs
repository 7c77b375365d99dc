//! `GET /v1/openapi.json`: the API described from the code: the route table below and the
//! JSON schemas schemars derives from the request and response types the handlers use.

use crate::routes::agents::{Agent, NewAgent};
use crate::routes::events::EventsQuery;
use crate::routes::operations::{
    Accepted, CreateOperation, Created, Decisions, ListQuery, OperationDetail,
};
use rein_operation::AgentProfile;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

struct Route {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: Option<Value>,
    query: Option<Value>,
    status: u16,
    response: Option<Value>,
}

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Option<Value> {
    Some(g.subschema_for::<T>().to_value())
}

/// The OpenAPI 3.0 document.
pub fn document() -> Value {
    let mut g = SchemaSettings::openapi3().into_generator();
    let any = Some(json!({}));
    let routes = vec![
        Route {
            method: "post",
            path: "/v1/operations",
            summary: "Start an operation; answered once it is committed",
            body: schema::<CreateOperation>(&mut g),
            query: None,
            status: 202,
            response: schema::<Created>(&mut g),
        },
        Route {
            method: "get",
            path: "/v1/operations",
            summary: "Your operations, newest first",
            body: None,
            query: schema::<ListQuery>(&mut g),
            status: 200,
            response: Some(json!({"type": "array", "items": {}})),
        },
        Route {
            method: "get",
            path: "/v1/operations/{id}",
            summary: "An operation, its step timeline and pending decisions",
            body: None,
            query: None,
            status: 200,
            response: schema::<OperationDetail>(&mut g),
        },
        Route {
            method: "post",
            path: "/v1/operations/{id}/cancel",
            summary: "Cancel (a running operation stops at its next boundary)",
            body: None,
            query: None,
            status: 202,
            response: schema::<Accepted>(&mut g),
        },
        Route {
            method: "post",
            path: "/v1/operations/{id}/resume",
            summary: "Continue from the last committed step",
            body: None,
            query: None,
            status: 202,
            response: schema::<Accepted>(&mut g),
        },
        Route {
            method: "get",
            path: "/v1/operations/{id}/events",
            summary: "Server-Sent Events from the durable log; resume with Last-Event-ID or ?after=",
            body: None,
            query: schema::<EventsQuery>(&mut g),
            status: 200,
            response: None,
        },
        Route {
            method: "get",
            path: "/v1/operations/{id}/interventions",
            summary: "Approval requests, decided or not",
            body: None,
            query: None,
            status: 200,
            response: any.clone(),
        },
        Route {
            method: "post",
            path: "/v1/operations/{id}/interventions",
            summary: "Approve or reject pending tool calls (single-use)",
            body: schema::<Decisions>(&mut g),
            query: None,
            status: 202,
            response: schema::<Accepted>(&mut g),
        },
        Route {
            method: "get",
            path: "/v1/agents",
            summary: "Your agents",
            body: None,
            query: None,
            status: 200,
            response: Some(
                json!({"type": "array", "items": g.subschema_for::<Agent>().to_value()}),
            ),
        },
        Route {
            method: "post",
            path: "/v1/agents",
            summary: "Create an agent",
            body: schema::<NewAgent>(&mut g),
            query: None,
            status: 201,
            response: schema::<Agent>(&mut g),
        },
        Route {
            method: "get",
            path: "/v1/agents/{name}",
            summary: "One agent",
            body: None,
            query: None,
            status: 200,
            response: schema::<Agent>(&mut g),
        },
        Route {
            method: "put",
            path: "/v1/agents/{name}",
            summary: "Replace an agent's configuration",
            body: schema::<AgentProfile>(&mut g),
            query: None,
            status: 200,
            response: schema::<Agent>(&mut g),
        },
        Route {
            method: "delete",
            path: "/v1/agents/{name}",
            summary: "Delete an agent",
            body: None,
            query: None,
            status: 204,
            response: None,
        },
        Route {
            method: "get",
            path: "/v1/topics",
            summary: "Your conversations",
            body: None,
            query: None,
            status: 200,
            response: any.clone(),
        },
        Route {
            method: "get",
            path: "/v1/topics/{id}/messages",
            summary: "A conversation's messages with parent ids (branches)",
            body: None,
            query: None,
            status: 200,
            response: any.clone(),
        },
        Route {
            method: "get",
            path: "/v1/models",
            summary: "Catalogued models and the default",
            body: None,
            query: None,
            status: 200,
            response: any,
        },
    ];
    let error = json!({
        "description": "Error",
        "content": {"application/json": {"schema": {
            "type": "object",
            "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}, "details": {}
            }}}
        }}}
    });
    let mut paths = Map::new();
    for r in routes {
        let mut op = json!({
            "summary": r.summary,
            "security": [{"bearer": []}],
            "responses": {"4XX": error.clone()},
        });
        let mut params = Vec::new();
        for segment in r.path.split('/') {
            if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                params.push(json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}));
            }
        }
        if let Some(Value::Object(q)) = &r.query {
            // Query structs are inlined by reference; list their properties as parameters.
            let name = q
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|s| s.rsplit('/').next());
            if let Some(props) = name
                .and_then(|n| g.definitions().get(n))
                .and_then(|d| d.get("properties"))
                .and_then(Value::as_object)
            {
                for (k, v) in props {
                    params.push(json!({"name": k, "in": "query", "required": false, "schema": v}));
                }
            }
        }
        if !params.is_empty() {
            op["parameters"] = Value::Array(params);
        }
        if let Some(body) = r.body {
            op["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": body}}});
        }
        let mut ok = json!({"description": "OK"});
        if let Some(resp) = r.response {
            ok["content"] = json!({"application/json": {"schema": resp}});
        }
        if r.path.ends_with("/events") {
            ok["content"] = json!({"text/event-stream": {"schema": {"type": "string"}}});
        }
        op["responses"][r.status.to_string()] = ok;
        let entry = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
        entry[r.method] = op;
    }
    json!({
        "openapi": "3.0.3",
        "info": {"title": "rein", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Bounded, durable agent operations over HTTP."},
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}
