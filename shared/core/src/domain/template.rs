//! A tenant's named task template: request settings (URL or URL base, method, headers,
//! timeout, `expect_body`, retry, flow, alerts) its tasks take unless they give their own.
//! A template is written in the terms of a registration's request: the API checks it when
//! it is stored and lays it under each request that names it before reading the request,
//! so the core keeps it as that checked document. The template named `default` applies to
//! the tenant's tasks that name none.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Template(pub serde_json::Map<String, serde_json::Value>);
