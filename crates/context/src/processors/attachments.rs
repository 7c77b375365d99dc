//! `attachments`: images reach only models that can see them; for any other model each image
//! becomes a short text note (never the bytes of a `data:` URL), so the model knows something
//! was attached instead of the provider rejecting the request. Attached files become text for
//! every model: a text file's contents inlined up to the agent's per-file limit (with a note
//! when cut), any other file a note naming it; with `spotlight`, in a data block.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::ContentPart;
use std::sync::Arc;

/// Inlines files and degrades images for models without vision (see the module docs).
pub struct Attachments;

impl Processor for Attachments {
    fn name(&self) -> &'static str {
        "attachments"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let vision = input.model.vision;
        let rewritten = |p: &ContentPart| match p {
            ContentPart::File { .. } => true,
            ContentPart::Image { .. } => !vision,
            ContentPart::Text { .. } => false,
        };
        for m in draft.messages.iter_mut() {
            if !m.content.iter().any(rewritten) {
                continue;
            }
            for part in Arc::make_mut(m).content.iter_mut() {
                if let Some(text) = part.file_text(input.agent.max_file_chars) {
                    let text = if input.agent.spotlight {
                        super::spotlight::wrap("file", &text)
                    } else {
                        text
                    };
                    *part = ContentPart::Text { text };
                } else if let ContentPart::Image {
                    url, media_type, ..
                } = part
                {
                    if vision {
                        continue;
                    }
                    let what = if url.starts_with("data:") {
                        media_type.as_deref().unwrap_or("inline image").to_owned()
                    } else {
                        url.clone()
                    };
                    *part = ContentPart::Text {
                        text: format!(
                            "[An image was attached ({what}); this model cannot view images.]"
                        ),
                    };
                }
            }
        }
    }
}
