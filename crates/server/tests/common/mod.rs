//! An in-process server for contract tests: the real router over a real store (SQLite, or
//! PostgreSQL with `REIN_E2E_DATABASE=postgres`), the real runner answered by a scripted model
//! in OpenAI's wire format, bearer-token auth; each request goes through the router with
//! `tower::ServiceExt::oneshot` (no socket, no process), so the server's code is what runs and
//! what coverage counts.

use axum::body::Body;
use axum::http::Request;
use rein_core::OperationId;
use rein_model::testing::{Canned, Server, serve};
use rein_model::{Catalog, Registry, ReqwestTransport};
use rein_server::{App, AppState, AuthMode, Hub, Runner, ServerConfig};
use rein_store::{Accounts, SqlStore, Synchronous};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tower::ServiceExt;

pub use rein_testkit::eventually;

/// Changes to a test server's host after `rein serve`'s defaults.
type HostSetup<'a> = Box<dyn FnOnce(&mut rein_operation::Host) + 'a>;

/// A server's app with its model and database.
pub struct Api {
    /// The app every request reaches.
    pub app: AppState,
    /// The scripted model its operations call.
    pub model: Server,
    /// Every answer's `method path` and status, in order.
    answered: std::sync::Mutex<Vec<(String, u16)>>,
    /// Every answer's body, in order (what a test scans for what no answer may carry).
    pub bodies: std::sync::Mutex<Vec<u8>>,
    _db: rein_testkit::E2eDatabase,
}

/// A runner whose operations call the OpenAI-protocol model at `base` (`http://host:port`).
pub fn runner(
    store: &Arc<SqlStore>,
    hub: &Arc<Hub>,
    base: &str,
    working_directory: Option<String>,
) -> Arc<Runner> {
    let base = format!("{base}/v1");
    let registry = Registry::new(
        Registry::builtin_presets_json(),
        BTreeMap::new(),
        Box::new(move |k| match k {
            "OPENAI_BASE_URL" => Some(base.clone()),
            "OPENAI_API_KEY" => Some("sk-test".into()),
            _ => None,
        }),
    )
    .unwrap();
    let catalog = Arc::new(Catalog::builtin().unwrap());
    let models = Arc::new(rein_operation::RegistryModels::new(
        registry,
        Arc::new(ReqwestTransport::new(Default::default()).unwrap()),
        Arc::clone(&catalog),
        true,
    ));
    let mut host = rein_operation::Host::new(
        store.clone(),
        models,
        catalog,
        rein_operation::profile::model_ref("openai/gpt-4o-mini").unwrap(),
    );
    // As `rein serve` makes it: operations run on the server's surface (or its devices), and
    // delegation finds each owner's stored agents.
    host.surfaces = rein_operation::surface::Surfaces {
        own: rein_core::spec::Surface::Server,
        external: rein_operation::external::ExternalAgents::none(),
        devices: true,
    };
    host.devices = Some(Arc::new(rein_operation::devices::StoredDevices(
        Arc::clone(store) as Arc<dyn rein_store::Devices>,
    )));
    host.working_directory = working_directory;
    // As `rein serve` makes it: users may bring their own providers, the server lends its key.
    host.own_provider_keys = Some(rein_operation::own_models::OwnProviderKeys {
        secret: Some(rein_operation::secrets::SecretKey::generate().unwrap()),
        lend_keys: true,
        base_urls: true,
    });
    host.agents = Some(Arc::new(rein_operation::StoredAgents {
        accounts: Arc::clone(store) as Arc<dyn Accounts>,
        local_user: None,
        fixed: BTreeMap::new(),
    }));
    Arc::new(Runner::new(Arc::clone(store), Arc::clone(hub), host))
}

impl Api {
    /// A server whose model answers with `responses`, in order; its operations have no
    /// working directory (no file or shell access), as `rein serve` without `--workdir`.
    pub async fn new(responses: Vec<Canned>) -> Self {
        Self::serving(responses, false, ServerConfig::default(), None).await
    }

    /// As [`Api::new`], serving users' own providers as `keys` says.
    pub async fn with_own_provider_keys(
        responses: Vec<Canned>,
        keys: rein_operation::own_models::OwnProviderKeys,
    ) -> Self {
        Self::with_host(responses, |host| host.own_provider_keys = Some(keys)).await
    }

    /// As [`Api::new`], its host set up by `setup` after `rein serve`'s defaults.
    pub async fn with_host(
        responses: Vec<Canned>,
        setup: impl FnOnce(&mut rein_operation::Host),
    ) -> Self {
        Self::serving(
            responses,
            false,
            ServerConfig::default(),
            Some(Box::new(setup)),
        )
        .await
    }

    /// As [`Api::new`], with `dir/work` as its operations' working directory (`--workdir`).
    pub async fn with_workdir(responses: Vec<Canned>) -> Self {
        Self::serving(responses, true, ServerConfig::default(), None).await
    }

    /// As [`Api::new`], configured as `config` says (caps, ...).
    pub async fn with_config(responses: Vec<Canned>, config: ServerConfig) -> Self {
        Self::serving(responses, false, config, None).await
    }

    async fn serving(
        responses: Vec<Canned>,
        workdir: bool,
        config: ServerConfig,
        setup: Option<HostSetup<'_>>,
    ) -> Self {
        let dir = std::env::temp_dir().join(format!("rein-api-{}", OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = rein_testkit::E2eDatabase::new(&dir).await;
        let store = Arc::new(SqlStore::open(&db.url, Synchronous::Normal).await.unwrap());
        let model = serve(responses, 3).await;
        let hub = Arc::new(Hub::default());
        let work = workdir.then(|| {
            let work = dir.join("work");
            std::fs::create_dir_all(&work).unwrap();
            work.to_string_lossy().into_owned()
        });
        let mut runner = runner(&store, &hub, &model.base, work);
        if let Some(setup) = setup {
            let Some(r) = Arc::get_mut(&mut runner) else {
                unreachable!("the runner was just made")
            };
            setup(&mut r.host);
        }
        let app = Arc::new(App::new(store, runner, hub, AuthMode::Tokens, config));
        Self {
            app,
            model,
            answered: std::sync::Mutex::default(),
            bodies: std::sync::Mutex::default(),
            _db: db,
        }
    }

    /// A new API token of `user` (made when missing), as `rein token create` makes one.
    pub async fn token(&self, user: &str) -> String {
        let store = &self.app.store;
        let u = match store.user_by_name(user).await.unwrap() {
            Some(u) => u,
            None => store.create_user(user).await.unwrap(),
        };
        let token = rein_server::new_token().unwrap();
        store
            .add_token(
                &u.id,
                &rein_server::hash_token(&token),
                &rein_store::TokenSpec::default(),
            )
            .await
            .unwrap();
        token
    }

    /// A new API token of `user` (made when missing) after making them an admin.
    pub async fn admin_token(&self, user: &str) -> String {
        let token = self.token(user).await;
        let id = self.app.store.user_by_name(user).await.unwrap().unwrap().id;
        self.app
            .store
            .set_role(&id, rein_store::UserRole::Admin)
            .await
            .unwrap();
        token
    }

    /// `method path` with `token` and a JSON `body`: the status and the JSON answer (`Null`
    /// when empty).
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let body = body.map(|b| ("application/json", b.to_string()));
        self.raw(method, path, token, body).await
    }

    /// `method path` with `token` and a body as given (content type, text): the status and
    /// the JSON answer (`Null` when empty; a test fails when it is not JSON).
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<(&str, String)>,
    ) -> (u16, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let body = match body {
            Some((content_type, text)) => {
                req = req.header("content-type", content_type);
                Body::from(text)
            }
            None => Body::empty(),
        };
        let (status, _, value) = self.send(req.body(body).unwrap()).await;
        (status, value)
    }

    /// Send `req` as it is: the status, the headers and the JSON answer (`Null` when empty; a
    /// test fails when it is not JSON).
    pub async fn send(
        &self,
        req: axum::http::Request<Body>,
    ) -> (u16, axum::http::HeaderMap, Value) {
        let what = format!("{} {}", req.method(), req.uri());
        let resp = rein_server::router(Arc::clone(&self.app))
            .oneshot(req)
            .await
            .unwrap();
        let status = resp.status().as_u16();
        self.answered.lock().unwrap().push((what.clone(), status));
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        self.bodies.lock().unwrap().extend_from_slice(&bytes);
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "{what} answered {status} with what is not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        (status, headers, value)
    }

    /// The database's URL (a SQLite file's path, or `postgres://...`).
    pub fn db_url(&self) -> String {
        self._db.url.clone()
    }

    /// The requests answered with a 5xx so far.
    pub fn server_errors(&self) -> Vec<(String, u16)> {
        self.answered
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| *s >= 500)
            .cloned()
            .collect()
    }
}

impl Api {
    /// The operation `op` of `token`'s owner once its status is `status`.
    pub async fn wait_status(&self, op: &str, token: &str, status: &str) -> Value {
        eventually(&format!("operation {op} reaching {status}"), || async {
            let (_, detail) = self
                .call("GET", &format!("/v1/operations/{op}"), Some(token), None)
                .await;
            (detail["operation"]["status"] == status).then_some(detail)
        })
        .await
    }
}

impl Api {
    /// `POST /v1/operations` with `body`, expecting `202`: the operation's id.
    pub async fn create_operation(&self, token: &str, body: Value) -> String {
        let (status, created) = self
            .call("POST", "/v1/operations", Some(token), Some(body))
            .await;
        assert_eq!(status, 202, "{created}");
        created["operation_id"].as_str().unwrap().to_owned()
    }

    /// `POST /v1/agents` for each `(name, config)`, expecting `201`.
    pub async fn create_agents(&self, token: &str, agents: &[(&str, Value)]) {
        for (name, config) in agents {
            let (status, body) = self
                .call(
                    "POST",
                    "/v1/agents",
                    Some(token),
                    Some(serde_json::json!({"name": name, "config": config})),
                )
                .await;
            assert_eq!(status, 201, "{body}");
        }
    }
}

impl Api {
    /// `method path` with `token` and a JSON body, read to its end as Server-Sent Events: the
    /// status, the headers, and each `data:` as JSON (`[DONE]` as the string).
    pub async fn stream(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, axum::http::HeaderMap, Vec<Value>) {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        let resp = rein_server::router(Arc::clone(&self.app))
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let data = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
            .map(|d| serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.to_owned())))
            .collect();
        (status, headers, data)
    }

    /// `GET path` with `token`: the status, the content type and the body as text.
    pub async fn text(&self, path: &str, token: Option<&str>) -> (u16, String, String) {
        let mut req = Request::builder().uri(path);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let resp = rein_server::router(Arc::clone(&self.app))
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        self.bodies.lock().unwrap().extend_from_slice(&bytes);
        (
            status,
            content_type,
            String::from_utf8_lossy(&bytes).into_owned(),
        )
    }

    /// The committed events of `op` so far, from its SSE stream read to the end of the log
    /// (`follow=false`): each `data:` as JSON.
    pub async fn events(&self, op: &str, token: &str) -> Vec<Value> {
        let (status, _, text) = self
            .text(
                &format!("/v1/operations/{op}/events?follow=false&live=false"),
                Some(token),
            )
            .await;
        assert_eq!(status, 200, "{text}");
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

impl Api {
    /// Approve every call `detail` (an operation's `GET`) lists as pending, expecting `202`.
    pub async fn approve_all(&self, op: &str, token: &str, detail: &Value) {
        let decisions: Vec<Value> = detail["pending"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| serde_json::json!({"tool_call_id": p["call"]["id"], "decision": "approve"}))
            .collect();
        let (status, body) = self
            .call(
                "POST",
                &format!("/v1/operations/{op}/interventions"),
                Some(token),
                Some(serde_json::json!({ "decisions": decisions })),
            )
            .await;
        assert_eq!(status, 202, "{body}");
    }
}

/// The model calls the calculator: call `id` evaluating `expr`.
pub fn calc(id: &str, expr: &str) -> Canned {
    Canned::openai_tools(&[(
        id,
        "calculator__evaluate",
        &serde_json::json!({"expression": expr}).to_string(),
    )])
}

impl Api {
    /// The detail of operation `op` once `check` holds for it (`what` names it in a failure).
    pub async fn wait_detail(
        &self,
        op: &str,
        token: &str,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        eventually(&format!("operation {op} getting {what}"), || async {
            let (_, detail) = self
                .call("GET", &format!("/v1/operations/{op}"), Some(token), None)
                .await;
            check(&detail).then_some(detail)
        })
        .await
    }
}
