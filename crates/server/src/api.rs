//! One route table for the router and the OpenAPI document. A route module adds each handler
//! once, with its method, path and summary; the handler's own argument and return types say
//! the rest: a `Body<T>` argument is the request body with `T`'s schema, `Params<T>` the query
//! parameters, a path extractor the path parameter with its format, `Caller` the bearer
//! security, and the return type the success status and its schema. So the document cannot
//! miss a route or disagree with a handler's types.

use crate::AppState;
use axum::Router;
use axum::handler::Handler;
use axum::routing::{MethodFilter, on};
use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde_json::{Map, Value, json};
use std::future::Future;

/// One operation's document while it is being derived.
#[derive(Debug, Default)]
pub struct OperationDoc {
    /// The route's path template (`/v1/operations/{id}`), for naming path parameters.
    pub path: String,
    /// `parameters`.
    pub parameters: Vec<Value>,
    /// `requestBody`.
    pub body: Option<Value>,
    /// The success status and its response object.
    pub success: Option<(u16, Value)>,
    /// Other answers that are not errors (a `204` when there is nothing to stream).
    pub also: Vec<(u16, Value)>,
    /// Error statuses the inputs can cause, with what each means.
    pub errors: Vec<(u16, &'static str)>,
    /// Whether the route needs a bearer token.
    pub secured: bool,
}

impl OperationDoc {
    /// The name of the path's (single) parameter.
    pub fn path_param(&self) -> &str {
        self.path
            .split('/')
            .find_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .unwrap_or("id")
    }

    /// Note an error status (once).
    pub fn error(&mut self, status: u16, means: &'static str) {
        if !self.errors.iter().any(|(s, _)| *s == status) {
            self.errors.push((status, means));
        }
    }
}

/// An extractor's part of an operation's document.
pub trait Input {
    /// Add what this argument contributes (nothing by default: state, headers).
    fn document(_doc: &mut OperationDoc, _g: &mut SchemaGenerator) {}
}

/// A handler's return type's part: the success response.
pub trait Output {
    /// Set `doc.success` (and any errors the output itself implies).
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator);
}

/// A handler whose arguments are all [`Input`]s and whose output is an [`Output`].
pub trait Documented<Args> {
    /// Derive the operation's document from the handler's types.
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator);
}

macro_rules! documented {
    ($($arg:ident),*) => {
        impl<F, Fut, R, $($arg,)*> Documented<($($arg,)*)> for F
        where
            F: FnOnce($($arg),*) -> Fut,
            Fut: Future<Output = R>,
            R: Output,
            $($arg: Input,)*
        {
            fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
                $(<$arg as Input>::document(doc, g);)*
                <R as Output>::document(doc, g);
            }
        }
    };
}

documented!();
documented!(A1);
documented!(A1, A2);
documented!(A1, A2, A3);
documented!(A1, A2, A3, A4);
documented!(A1, A2, A3, A4, A5);
documented!(A1, A2, A3, A4, A5, A6);

impl<S> Input for axum::extract::State<S> {}
impl Input for axum::http::HeaderMap {}

impl<T: Output, E> Output for Result<T, E> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        T::document(doc, g);
    }
}

/// `200` with `T` as JSON.
impl<T: JsonSchema> Output for axum::Json<T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        doc.success = Some((200, json_response(schema_of::<T>(g))));
    }
}

/// A JSON response with a status fixed by its type: `Reply<202, Created>`.
pub struct Reply<const CODE: u16, T>(pub T);

impl<const CODE: u16, T: serde::Serialize> axum::response::IntoResponse for Reply<CODE, T> {
    fn into_response(self) -> axum::response::Response {
        let status = axum::http::StatusCode::from_u16(CODE)
            .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(self.0)).into_response()
    }
}

impl<const CODE: u16, T: JsonSchema> Output for Reply<CODE, T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        doc.success = Some((CODE, json_response(schema_of::<T>(g))));
    }
}

/// `T` with a `Set-Cookie` header (a browser session signed in or out).
pub struct SetCookie<T>(pub axum::http::HeaderValue, pub T);

impl<T: axum::response::IntoResponse> axum::response::IntoResponse for SetCookie<T> {
    fn into_response(self) -> axum::response::Response {
        let mut response = self.1.into_response();
        response
            .headers_mut()
            .insert(axum::http::header::SET_COOKIE, self.0);
        response
    }
}

impl<T: Output> Output for SetCookie<T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        T::document(doc, g);
    }
}

/// `303 See Other` to `location`, setting `cookies`: a step of a browser's sign-in.
pub struct SeeOther {
    /// Where the browser goes next.
    pub location: String,
    /// `Set-Cookie` values.
    pub cookies: Vec<axum::http::HeaderValue>,
}

impl axum::response::IntoResponse for SeeOther {
    fn into_response(self) -> axum::response::Response {
        let mut response = axum::http::StatusCode::SEE_OTHER.into_response();
        let headers = response.headers_mut();
        if let Ok(location) = axum::http::HeaderValue::from_str(&self.location) {
            headers.insert(axum::http::header::LOCATION, location);
        }
        for c in self.cookies {
            headers.append(axum::http::header::SET_COOKIE, c);
        }
        response
    }
}

impl Output for SeeOther {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.success = Some((
            303,
            json!({
                "description": "Go on at `Location`",
                "headers": {"Location": {"schema": {"type": "string"}}}
            }),
        ));
    }
}

/// `200` with a file's bytes to save, never to render: `Content-Disposition: attachment`,
/// `nosniff`, and a sandbox policy, so an uploaded page cannot run as this origin.
pub struct Download {
    /// Its media type (an image's own; anything else is sent as bytes).
    pub media_type: String,
    /// The name to save it as.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl axum::response::IntoResponse for Download {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{HeaderValue, header};
        let shown = if self.media_type.starts_with("image/") && self.media_type != "image/svg+xml" {
            self.media_type
        } else {
            "application/octet-stream".to_owned()
        };
        // The name as ASCII for the plain parameter (quotes and controls replaced), and in
        // full as RFC 5987's `filename*`.
        let plain: String = self
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let encoded: String = self
            .name
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        let mut response = self.bytes.into_response();
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&shown) {
            headers.insert(header::CONTENT_TYPE, v);
        }
        if let Ok(v) = HeaderValue::from_str(&format!(
            "attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}"
        )) {
            headers.insert(header::CONTENT_DISPOSITION, v);
        }
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("sandbox"),
        );
        response
    }
}

impl Output for Download {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.success = Some((
            200,
            json!({
                "description": "The file's bytes, as an attachment to save",
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                    "image/*": {"schema": {"type": "string", "format": "binary"}}
                }
            }),
        ));
    }
}

/// `200` with an artifact's bytes to show inline in a sandbox: images, audio, CSV and plain
/// text as themselves; HTML as a page that runs in an opaque origin (`Content-Security-Policy:
/// sandbox allow-scripts`, never `allow-same-origin`) and may load nothing (`default-src
/// 'none'`: no request to this server or any other, so it reads no cookie and calls no API);
/// anything else as bytes to save. Always `nosniff`.
pub struct Preview {
    /// Its media type.
    pub media_type: String,
    /// Its name.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The policy an artifact is served under (see [`Preview`]).
pub const PREVIEW_POLICY: &str = "sandbox allow-scripts; default-src 'none'; img-src data:; \
     style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'none'; \
     frame-ancestors 'self'";

impl axum::response::IntoResponse for Preview {
    fn into_response(self) -> axum::response::Response {
        use axum::http::{HeaderValue, header};
        let inline = matches!(
            self.media_type.as_str(),
            "image/png"
                | "image/jpeg"
                | "image/gif"
                | "image/webp"
                | "text/csv"
                | "text/plain"
                | "text/markdown"
                | "text/html"
                | "application/json"
                | "audio/mpeg"
                | "audio/wav"
                | "audio/ogg"
                | "audio/aac"
                | "audio/flac"
        );
        if !inline {
            return Download {
                media_type: self.media_type,
                name: self.name,
                bytes: self.bytes,
            }
            .into_response();
        }
        let kind = if self.media_type.starts_with("text/") {
            format!("{}; charset=utf-8", self.media_type)
        } else {
            self.media_type
        };
        let mut response = self.bytes.into_response();
        let headers = response.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&kind) {
            headers.insert(header::CONTENT_TYPE, v);
        }
        headers.insert(
            header::CONTENT_DISPOSITION,
            HeaderValue::from_static("inline"),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(PREVIEW_POLICY),
        );
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, max-age=86400, immutable"),
        );
        response
    }
}

impl Output for Preview {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.success = Some((
            200,
            json!({
                "description": "The artifact's bytes: shown inline under a sandboxing content security policy (images, CSV, text, HTML), anything else as an attachment",
                "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                    "image/*": {"schema": {"type": "string", "format": "binary"}},
                    "text/*": {"schema": {"type": "string"}}
                }
            }),
        ));
    }
}

/// A `200` answered with Server-Sent Events: `description`, each event's `data:` one JSON
/// text (before OpenAPI 3.2, the schema of an event stream describes one event: its fields).
pub fn event_stream(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"text/event-stream": {"schema": {
            "type": "object",
            "required": ["data"],
            "properties": {
                "id": {"type": "string"},
                "event": {"type": "string"},
                "data": {"type": "string"}
            }
        }}}
    })
}

/// `204`: done, nothing to say.
pub struct NoContent;

impl axum::response::IntoResponse for NoContent {
    fn into_response(self) -> axum::response::Response {
        axum::http::StatusCode::NO_CONTENT.into_response()
    }
}

impl Output for NoContent {
    fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
        doc.success = Some((204, json!({"description": "Done"})));
    }
}

/// `T`'s schema as used in place (usually a reference to its definition), with the generator's
/// OpenAPI 3.0 transforms applied (definitions get them when taken; schemas placed in paths
/// would otherwise keep JSON Schema 2020 forms such as `type: [string, null]`).
pub fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    let schema = g.subschema_for::<T>();
    transformed(g, schema)
}

/// `T`'s own schema (never a reference), transformed like [`schema_of`].
pub fn inline_schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    let schema = T::json_schema(g);
    transformed(g, schema)
}

fn transformed(g: &mut SchemaGenerator, mut schema: schemars::Schema) -> Value {
    for t in g.transforms_mut() {
        t.transform(&mut schema);
    }
    schema.to_value()
}

fn json_response(schema: Value) -> Value {
    json!({"description": "OK", "content": {"application/json": {"schema": schema}}})
}

/// Routes with their documents, built by the route modules and merged into the app's router.
pub struct Api {
    router: Router<AppState>,
    paths: Map<String, Value>,
    generator: SchemaGenerator,
}

impl Default for Api {
    fn default() -> Self {
        Self::new()
    }
}

impl Api {
    /// No routes yet; schemas are generated for OpenAPI 3.0.
    pub fn new() -> Self {
        Self {
            router: Router::new(),
            paths: Map::new(),
            generator: schemars::generate::SchemaSettings::openapi3()
                .with_transform(schemars::transform::RecursiveTransform(bound_integers))
                .into_generator(),
        }
    }

    /// Route `method path` to `handler` and document it from the handler's types.
    pub fn route<H, T, Args>(self, method: Method, path: &str, summary: &str, handler: H) -> Self
    where
        H: Handler<T, AppState> + Documented<Args>,
        T: 'static,
    {
        self.add(method, path, summary, handler, None)
    }

    /// [`Api::route`] for a route whose body may be larger than the server's default limit
    /// (uploads): up to `limit` bytes.
    pub fn route_with_body_limit<H, T, Args>(
        self,
        method: Method,
        path: &str,
        summary: &str,
        limit: usize,
        handler: H,
    ) -> Self
    where
        H: Handler<T, AppState> + Documented<Args>,
        T: 'static,
    {
        self.add(method, path, summary, handler, Some(limit))
    }

    fn add<H, T, Args>(
        mut self,
        method: Method,
        path: &str,
        summary: &str,
        handler: H,
        body_limit: Option<usize>,
    ) -> Self
    where
        H: Handler<T, AppState> + Documented<Args>,
        T: 'static,
    {
        let mut doc = OperationDoc {
            path: path.to_owned(),
            ..Default::default()
        };
        <H as Documented<Args>>::document(&mut doc, &mut self.generator);
        let (verb, filter) = method.names();
        let entry = self
            .paths
            .entry(path.to_owned())
            .or_insert_with(|| json!({}));
        entry[verb] = operation_object(summary, doc);
        let mut route = on(filter, handler);
        if let Some(limit) = body_limit {
            // Inside the router's default limit, so this one is what the extractors see.
            route = route.layer(axum::extract::DefaultBodyLimit::max(limit));
        }
        self.router = self.router.route(path, route);
        self
    }

    /// Both tables together.
    pub fn merge(mut self, other: Api) -> Self {
        let Api {
            router,
            paths,
            mut generator,
        } = other;
        self.router = self.router.merge(router);
        for (path, ops) in paths {
            let entry = self.paths.entry(path).or_insert_with(|| json!({}));
            if let (Some(into), Value::Object(ops)) = (entry.as_object_mut(), ops) {
                into.extend(ops);
            }
        }
        self.generator
            .definitions_mut()
            .extend(generator.take_definitions(false));
        self
    }

    /// The router and the parts of the OpenAPI document the routes made (`paths` and the
    /// schemas they refer to).
    pub fn finish(mut self) -> (Router<AppState>, Map<String, Value>, Map<String, Value>) {
        let schemas = self.generator.take_definitions(true);
        (self.router, self.paths, schemas)
    }
}

/// Give sized integers the bounds of their format (`uint32` → 0..=4294967295): schemars names
/// the format, which validators ignore, so a client would see a larger number as valid.
fn bound_integers(schema: &mut schemars::Schema) {
    let bounds: Option<(i128, i128)> = match schema.get("format").and_then(Value::as_str) {
        Some("uint8") => Some((0, u8::MAX.into())),
        Some("uint16") => Some((0, u16::MAX.into())),
        Some("uint32") => Some((0, u32::MAX.into())),
        Some("uint64" | "uint") => Some((0, u64::MAX.into())),
        Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
        Some("int64" | "int") => Some((i64::MIN.into(), i64::MAX.into())),
        _ => None,
    };
    if let Some((min, max)) = bounds {
        // A declared bound that is tighter wins.
        let tighter_min = schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| m > min as f64);
        if !tighter_min {
            schema.insert("minimum".into(), json!(min));
        }
        let tighter_max = schema
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| m < max as f64);
        if !tighter_max {
            schema.insert("maximum".into(), json!(max));
        }
    }
}

/// The HTTP methods the API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

impl Method {
    fn names(self) -> (&'static str, MethodFilter) {
        match self {
            Method::Get => ("get", MethodFilter::GET),
            Method::Post => ("post", MethodFilter::POST),
            Method::Put => ("put", MethodFilter::PUT),
            Method::Patch => ("patch", MethodFilter::PATCH),
            Method::Delete => ("delete", MethodFilter::DELETE),
        }
    }
}

fn operation_object(summary: &str, doc: OperationDoc) -> Value {
    let mut op = json!({"summary": summary});
    let mut responses = Map::new();
    if let Some((status, response)) = doc.success {
        responses.insert(status.to_string(), response);
    }
    for (status, response) in doc.also {
        responses.insert(status.to_string(), response);
    }
    let mut errors = doc.errors;
    errors.sort_unstable();
    for (status, means) in errors {
        responses.insert(status.to_string(), error_response(means));
    }
    // Whatever else can go wrong (405, 414, 429, 5xx) comes in the same shape.
    responses.insert("default".into(), error_response("Error"));
    op["responses"] = Value::Object(responses);
    if !doc.parameters.is_empty() {
        op["parameters"] = Value::Array(doc.parameters);
    }
    if let Some(body) = doc.body {
        op["requestBody"] = body;
    }
    op["security"] = if doc.secured {
        json!([{"bearer": []}, {"session": []}])
    } else {
        json!([])
    };
    op
}

/// A response in the one error shape.
pub fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}
