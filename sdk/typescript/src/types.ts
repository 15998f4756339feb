// Short names for the API's types (all generated in schema.ts from the OpenAPI document).
import type { components, operations } from './schema.js';

type Schemas = components['schemas'];

export type TaskRequest = Schemas['TaskRequest'];
export type Task = Schemas['TaskView'];
export type TaskStatus = Schemas['Status'];
export type Attempt = Schemas['AttemptView'];
export type TaskPage = Schemas['PageView'];
export type TaskListQuery = NonNullable<operations['list_tasks']['parameters']['query']>;
export type BatchResult = Schemas['BatchView'];
export type BatchItem = Schemas['BatchItemView'];
export type KeyCancelResult = Schemas['KeyCancelView'];
export type KeyReleaseResult = Schemas['KeyReleaseView'];

export type BulkRequest = Schemas['BulkRequest'];
export type BulkPreview = Schemas['BulkPreviewView'];
export type BulkJob = Schemas['BulkJobView'];
export type BulkJobs = Schemas['BulkJobsView'];

export type ScheduleRequest = Schemas['ScheduleRequest'];
export type Schedule = Schemas['ScheduleView'];
export type SchedulePage = Schemas['ScheduleListView'];
export type ScheduleListQuery = NonNullable<operations['list_schedules']['parameters']['query']>;

export type PolicyRequest = Schemas['PolicyRequest'];
export type Policy = Schemas['PolicyView'];
export type Policies = Schemas['PoliciesView'];

export type TemplateRequest = Schemas['TemplateRequest'];
export type Template = Schemas['TemplateView'];
export type Templates = Schemas['TemplatesView'];

export type Flow = Schemas['FlowStateView'];
export type Flows = Schemas['FlowsView'];

export type Breakers = Schemas['BreakersView'];
export type Breaker = Schemas['BreakerView'];
export type BreakerSettingsRequest = Schemas['BreakerSettingsRequest'];
export type BreakerSettings = Schemas['BreakerSettingsView'];

export type OrderKey = Schemas['OrderKeyView'];
export type OrderKeyPage = Schemas['OrderKeysView'];
export type OrderKeyListQuery = NonNullable<operations['list_order_keys']['parameters']['query']>;

export type RotationRequest = Schemas['RotationRequest'];
export type SigningSecrets = Schemas['SigningSecretsView'];

export type Stats = Schemas['StatsView'];
export type Health = Schemas['Health'];
