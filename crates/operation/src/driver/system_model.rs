//! The system model: the model rein asks for its own small jobs (a conversation's title, a
//! task run's handoff and whether it needs a person), outside any operation. One request, the
//! whole answer collected; nothing is recorded in an operation.

use super::Driver;
use futures::StreamExt;
use rein_core::message::Message;
use rein_model::request::ResponseFormat;
use rein_model::{ChatRequest, ModelError};
use std::sync::Arc;

/// Why the system model gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum SystemModelError {
    /// The host names none.
    #[error("no system model is configured")]
    NotConfigured,
    /// Its provider cannot be reached from this process.
    #[error(transparent)]
    Unavailable(#[from] crate::models::ModelUnavailable),
    /// The call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A JSON answer that is not JSON.
    #[error("the system model's answer is not JSON: {0}")]
    NotJson(String),
}

impl Driver {
    /// Whether a system model is configured.
    pub fn has_system_model(&self) -> bool {
        self.system_model.is_some()
    }

    /// Ask the system model: `instructions` as the system message, `input` as the user's;
    /// the answer's text.
    pub(super) async fn ask_system_model(
        &self,
        instructions: &str,
        input: String,
        format: ResponseFormat,
    ) -> Result<String, SystemModelError> {
        let model = self
            .system_model
            .as_ref()
            .ok_or(SystemModelError::NotConfigured)?;
        ask(
            &*self.models,
            model,
            self.cancel.child_token(),
            instructions,
            input,
            format,
        )
        .await
    }

    /// Ask the system model for a JSON object matching `schema` (named `name`, strict where the
    /// provider supports it); `None` when no system model is configured (the caller then
    /// falls back to its rules).
    pub async fn ask_system_model_json(
        &self,
        instructions: &str,
        input: String,
        name: &str,
        schema: serde_json::Value,
    ) -> Result<Option<serde_json::Value>, SystemModelError> {
        let Some(model) = self.system_model.as_ref() else {
            return Ok(None);
        };
        ask_json(
            &*self.models,
            model,
            self.cancel.child_token(),
            instructions,
            input,
            name,
            schema,
        )
        .await
        .map(Some)
    }
}

/// Ask `model`: `instructions` as the system message, `input` as the user's; the answer's text.
pub async fn ask(
    models: &dyn crate::models::ModelSource,
    model: &rein_core::state::ModelRef,
    cancel: tokio_util::sync::CancellationToken,
    instructions: &str,
    input: String,
    format: ResponseFormat,
) -> Result<String, SystemModelError> {
    ask_metered(models, model, cancel, instructions, input, format)
        .await
        .map(|a| a.text)
}

/// A model's whole answer with what it used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MeteredAnswer {
    /// Its text.
    pub text: String,
    /// Its tokens.
    pub usage: rein_core::usage::TokenUsage,
    /// What the provider said it cost, if it did.
    pub reported: Option<rein_core::Usd>,
}

/// [`ask`], with the tokens the call used and the cost the provider reported (a goal counts
/// its planning and verification calls against its budget).
pub async fn ask_metered(
    models: &dyn crate::models::ModelSource,
    model: &rein_core::state::ModelRef,
    cancel: tokio_util::sync::CancellationToken,
    instructions: &str,
    input: String,
    format: ResponseFormat,
) -> Result<MeteredAnswer, SystemModelError> {
    let provider = models.provider(model)?;
    let mut req = ChatRequest::new(
        model.model.to_string(),
        vec![
            Arc::new(Message::system(instructions)),
            Arc::new(Message::user(input)),
        ],
    );
    req.response_format = format;
    req.cancel = cancel;
    let mut stream = provider.chat(req);
    let mut collector = rein_model::Collector::new();
    while let Some(event) = stream.next().await {
        collector.push(&event);
    }
    let reply = collector.finish();
    match reply.error {
        Some(e) => Err(e.into()),
        None => Ok(MeteredAnswer {
            text: reply.text,
            usage: reply.usage.unwrap_or_default(),
            reported: reply.reported_cost,
        }),
    }
}

/// The JSON object in a model's answer `text` (some models wrap it in a code fence even when
/// asked not to).
pub fn json_in(text: &str) -> Result<serde_json::Value, SystemModelError> {
    let body = text.trim();
    let body = body
        .strip_prefix("```json")
        .or_else(|| body.strip_prefix("```"))
        .and_then(|b| b.strip_suffix("```"))
        .unwrap_or(body)
        .trim();
    serde_json::from_str(body).map_err(|e| {
        let shown: String = text.chars().take(200).collect();
        SystemModelError::NotJson(format!("{e} in {shown:?}"))
    })
}

/// Ask `model` for a JSON object matching `schema` (named `name`, strict where the provider
/// supports it).
pub async fn ask_json(
    models: &dyn crate::models::ModelSource,
    model: &rein_core::state::ModelRef,
    cancel: tokio_util::sync::CancellationToken,
    instructions: &str,
    input: String,
    name: &str,
    schema: serde_json::Value,
) -> Result<serde_json::Value, SystemModelError> {
    let text = ask(
        models,
        model,
        cancel,
        instructions,
        input,
        ResponseFormat::JsonSchema {
            name: name.to_owned(),
            schema,
            strict: true,
        },
    )
    .await?;
    json_in(&text)
}
