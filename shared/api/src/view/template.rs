//! What the API shows of a tenant's task templates: their settings as they were put, but
//! header values (of the task's headers and of its alerts') are never shown again, as a
//! task's are not.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::request::TemplateRequest;
use boomerang_core::domain::{DefinitionName, Template};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplateView {
    pub name: String,
    /// The template's fields, without header values.
    pub settings: TemplateRequest,
    /// The names of the headers its tasks send.
    pub header_names: Vec<String>,
}

impl TemplateView {
    pub fn new(name: &DefinitionName, template: &Template) -> Self {
        // A stored template was checked when it was put; one that no longer reads shows
        // as empty rather than failing the listing it is in.
        let mut settings = TemplateRequest::stored(template).unwrap_or_default();
        let header_names = (settings.headers.take().unwrap_or_default())
            .into_keys()
            .collect();
        for alert in [&mut settings.on_failure, &mut settings.on_success]
            .into_iter()
            .flatten()
        {
            alert.headers = None;
        }
        Self {
            name: name.to_string(),
            settings,
            header_names,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TemplatesView {
    pub templates: Vec<TemplateView>,
}
