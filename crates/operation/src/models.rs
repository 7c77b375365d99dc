//! Where an operation's model comes from. The model is part of the operation's spec, so a
//! driver asks a [`ModelSource`] for it each time it runs an operation, instead of being built
//! for one model.

use rein_core::state::ModelRef;
use rein_model::{Catalog, ModelProvider, Registry, Transport, UserProvider};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Why a model cannot be reached from this process.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("model {model} is not available here: {reason}")]
pub struct ModelUnavailable {
    /// `provider/model`.
    pub model: String,
    /// Why (unknown provider, missing API key, ...).
    pub reason: String,
}

/// Providers for the models operations name.
pub trait ModelSource: Send + Sync {
    /// The provider that answers for `model`.
    fn provider(&self, model: &ModelRef) -> Result<Arc<dyn ModelProvider>, ModelUnavailable>;

    /// The provider for `model` made with what a user brought over this source's configuration
    /// ([`crate::own_models`]); a source that makes providers from no configuration refuses.
    fn provider_for_user(
        &self,
        model: &ModelRef,
        own: &UserProvider<'_>,
    ) -> Result<Arc<dyn ModelProvider>, ModelUnavailable> {
        let _ = own;
        Err(ModelUnavailable {
            model: model.key(),
            reason: "this process makes no provider from a user's own settings".into(),
        })
    }
}

/// One provider for one provider id (tests, benchmarks, embedded use).
pub struct SingleProvider {
    /// The provider id it answers for.
    pub id: String,
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
}

impl ModelSource for SingleProvider {
    fn provider(&self, model: &ModelRef) -> Result<Arc<dyn ModelProvider>, ModelUnavailable> {
        if *model.provider == *self.id {
            Ok(Arc::clone(&self.provider))
        } else {
            Err(ModelUnavailable {
                model: model.key(),
                reason: format!("this process only has provider `{}`", self.id),
            })
        }
    }
}

/// Providers from the registry (presets, configuration, environment) over one transport, made
/// once per provider id.
pub struct RegistryModels {
    registry: Registry,
    transport: Arc<dyn Transport>,
    catalog: Arc<Catalog>,
    require_keys: bool,
    made: Mutex<HashMap<String, Arc<dyn ModelProvider>>>,
}

impl RegistryModels {
    /// Providers from `registry` over `transport`; with `require_keys`, a provider whose API
    /// key is missing is unavailable (off when replaying a cassette).
    pub fn new(
        registry: Registry,
        transport: Arc<dyn Transport>,
        catalog: Arc<Catalog>,
        require_keys: bool,
    ) -> Self {
        Self {
            registry,
            transport,
            catalog,
            require_keys,
            made: Mutex::new(HashMap::new()),
        }
    }
}

impl ModelSource for RegistryModels {
    fn provider(&self, model: &ModelRef) -> Result<Arc<dyn ModelProvider>, ModelUnavailable> {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = made.get(&*model.provider) {
            return Ok(Arc::clone(p));
        }
        let config = if self.require_keys {
            self.registry.provider_with_key(&model.provider)
        } else {
            self.registry.provider(&model.provider)
        }
        .map_err(|e| ModelUnavailable {
            model: model.key(),
            reason: e.to_string(),
        })?;
        let provider: Arc<dyn ModelProvider> = Arc::new(
            rein_model::Provider::new(config, Arc::clone(&self.transport))
                .with_catalog(Arc::clone(&self.catalog)),
        );
        made.insert(model.provider.to_string(), Arc::clone(&provider));
        Ok(provider)
    }

    fn provider_for_user(
        &self,
        model: &ModelRef,
        own: &UserProvider<'_>,
    ) -> Result<Arc<dyn ModelProvider>, ModelUnavailable> {
        // Made for each run, never kept: it holds the user's key.
        let config = self
            .registry
            .provider_for_user(&model.provider, own)
            .map_err(|e| ModelUnavailable {
                model: model.key(),
                reason: e.to_string(),
            })?;
        Ok(Arc::new(
            rein_model::Provider::new(config, Arc::clone(&self.transport))
                .with_catalog(Arc::clone(&self.catalog)),
        ))
    }
}
