// Assertions on the synthesized template: every resource and wiring the stack promises.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import {
  API_MEMORY_MB,
  BoomerangStack,
  BoomerangStackProps,
  DEFAULT_DELIVERY_MAX_CONCURRENCY,
  DELIVERY_MEMORY_MB,
  MAX_WEBHOOK_TIMEOUT_SECONDS,
} from '../lib/boomerang-stack';
import tableLayout from '../lib/table-layout.json';

// No zips in an empty directory: the placeholder code is used.
const noZips = path.join(os.tmpdir(), 'boomerang-no-zips');

function synth(extra: Partial<BoomerangStackProps> = {}): Template {
  const app = new App();
  const stack = new BoomerangStack(app, 'Test', { stage: 'test', assetDir: noZips, ...extra });
  return Template.fromStack(stack);
}

const template = synth();
const resources = (type: string) => template.findResources(type);
const only = (type: string) => {
  const all = Object.values(resources(type));
  assert.equal(all.length, 1, `exactly one ${type}`);
  return all[0] as { Properties: any };
};
const fnByName = (name: string) =>
  Object.values(resources('AWS::Lambda::Function')).find(
    (f: any) => f.Properties.FunctionName === `test-boomerang-${name}`,
  ) as { Properties: any };
const logicalIdOf = (type: string, pred: (r: any) => boolean) =>
  Object.entries(resources(type)).find(([, r]) => pred(r))![0];

test('the table has the store keys, keys-only indexes and TTL, point-in-time recovery and protection', () => {
  // table-layout.json is checked against the store's attribute names by a Rust test
  // (shared/aws/src/attr.rs); here the template is checked against the file.
  const table = only('AWS::DynamoDB::Table');
  const p = table.Properties;
  const keySchema = (k: { partitionKey: { name: string }; sortKey: { name: string } }) => [
    { AttributeName: k.partitionKey.name, KeyType: 'HASH' },
    { AttributeName: k.sortKey.name, KeyType: 'RANGE' },
  ];
  assert.deepEqual(p.KeySchema, keySchema(tableLayout));
  assert.deepEqual(p.KeySchema, [
    { AttributeName: 'pk', KeyType: 'HASH' },
    { AttributeName: 'sk', KeyType: 'RANGE' },
  ]);
  assert.equal(p.BillingMode, 'PAY_PER_REQUEST');
  assert.deepEqual(p.TimeToLiveSpecification, {
    AttributeName: tableLayout.timeToLive,
    Enabled: true,
  });
  assert.equal(p.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled, true);
  assert.equal(p.DeletionProtectionEnabled, true);
  assert.equal(p.SSESpecification.SSEEnabled, true);
  // Every key attribute is defined with the type the store writes.
  const types = new Map(
    p.AttributeDefinitions.map((d: any) => [d.AttributeName, d.AttributeType]),
  );
  for (const k of [tableLayout, ...tableLayout.indexes]) {
    for (const a of [k.partitionKey, k.sortKey]) {
      assert.equal(types.get(a.name), a.type, `attribute ${a.name}`);
    }
  }
  assert.equal(p.GlobalSecondaryIndexes.length, tableLayout.indexes.length);
  for (const layout of tableLayout.indexes) {
    const index = p.GlobalSecondaryIndexes.find((i: any) => i.IndexName === layout.name);
    assert.ok(index, `index ${layout.name}`);
    assert.deepEqual(index.KeySchema, keySchema(layout));
    // A state change rewrites no index entry: each projects keys only. Tasks are listed
    // from the table (keyed by tenant), so there is no index for that.
    assert.equal(index.Projection.ProjectionType, 'KEYS_ONLY');
  }
  assert.deepEqual(
    tableLayout.indexes.map((i) => i.name),
    ['due', 'by_key'],
  );
});

test('deletion protection can be turned off for test stacks', () => {
  const t = synth({ deletionProtection: false });
  t.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: false });
  t.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Delete' });
  template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
});

test('what holds the work is kept when the stack goes: the table, the queues, the schedule group', () => {
  for (const type of ['AWS::DynamoDB::Table', 'AWS::SQS::Queue', 'AWS::Scheduler::ScheduleGroup']) {
    for (const r of Object.values(resources(type)) as any[]) {
      assert.equal(r.DeletionPolicy, 'Retain', type);
    }
    const throwAway = Object.values(synth({ deletionProtection: false }).findResources(type)) as any[];
    for (const r of throwAway) {
      assert.equal(r.DeletionPolicy, 'Delete', `${type} of a test stack`);
    }
  }
});

test('three provided.al2023 functions, arm64 by default, sized as the cost meter prices them', () => {
  for (const name of ['api', 'delivery', 'sweeper']) {
    const fn = fnByName(name).Properties;
    assert.equal(fn.Runtime, 'provided.al2023');
    assert.deepEqual(fn.Architectures, ['arm64']);
    assert.equal(fn.Handler, 'bootstrap');
    assert.ok(fn.MemorySize >= 256);
    // JSON logs, and the platform's START/END/REPORT lines only at WARN (logs bill by byte).
    assert.equal(fn.LoggingConfig.LogFormat, 'JSON');
    assert.equal(fn.LoggingConfig.SystemLogLevel, 'WARN');
  }
  const delivery = fnByName('delivery').Properties;
  assert.ok(delivery.Timeout > MAX_WEBHOOK_TIMEOUT_SECONDS, 'above the longest webhook timeout');
  assert.equal(delivery.MemorySize, DELIVERY_MEMORY_MB);
  assert.equal(fnByName('api').Properties.MemorySize, API_MEMORY_MB);
  assert.ok(fnByName('api').Properties.Timeout < 30, 'inside API Gateway’s limit');
  assert.equal(fnByName('sweeper').Properties.ReservedConcurrentExecutions, 1);
  const x86 = synth({ architecture: 'x86_64' });
  x86.hasResourceProperties('AWS::Lambda::Function', { Architectures: ['x86_64'] });
});

test('functions are configured from the stack parameters', () => {
  const t = synth({
    retentionDays: 30,
    deliveryReservedConcurrency: 25,
    allowedCidrs: '10.1.0.0/16',
    alertUrl: 'https://ops.example.com/alerts',
  });
  t.hasResourceProperties('AWS::Lambda::Function', {
    FunctionName: 'test-boomerang-delivery',
    ReservedConcurrentExecutions: 25,
    Environment: {
      Variables: Match.objectLike({
        BOOMERANG_RETENTION_DAYS: '30',
        BOOMERANG_ALLOWED_CIDRS: '10.1.0.0/16',
        BOOMERANG_ALERT_URL: 'https://ops.example.com/alerts',
        BOOMERANG_TABLE: Match.anyValue(),
        BOOMERANG_TIMER_QUEUE_URL: Match.anyValue(),
        BOOMERANG_DEAD_LETTER_QUEUE_URL: Match.anyValue(),
        BOOMERANG_SCHEDULE_GROUP: Match.anyValue(),
        BOOMERANG_DELIVERY_FUNCTION_ARN: Match.anyValue(),
        BOOMERANG_SCHEDULER_ROLE_ARN: Match.anyValue(),
        BOOMERANG_SYSTEM_FAILURES_QUEUE_URL: Match.anyValue(),
      }),
    },
  });
  assert.throws(() => synth({ retentionDays: 1 }), /at least 2/);
});

test('the HTTP API routes /v1/*, /healthz, /openapi.json and the console to the API function, logged and throttled', () => {
  const routes = Object.values(resources('AWS::ApiGatewayV2::Route')).map((r: any) => r.Properties.RouteKey);
  assert.deepEqual(routes.sort(), [
    'ANY /v1/{proxy+}',
    'GET /console',
    'GET /console/{file}',
    'GET /healthz',
    'GET /openapi.json',
  ]);
  const stage = only('AWS::ApiGatewayV2::Stage').Properties;
  assert.ok(stage.AccessLogSettings.DestinationArn);
  assert.match(stage.AccessLogSettings.Format, /\$context.requestId/);
  assert.equal(stage.DefaultRouteSettings.ThrottlingRateLimit, 100);
  assert.equal(stage.DefaultRouteSettings.ThrottlingBurstLimit, 200);
  // Raised with the traffic.
  const raised = Object.values(synth({ apiRateLimit: 3000 }).findResources('AWS::ApiGatewayV2::Stage'))[0] as any;
  assert.equal(raised.Properties.DefaultRouteSettings.ThrottlingRateLimit, 3000);
  assert.equal(raised.Properties.DefaultRouteSettings.ThrottlingBurstLimit, 3000);
  assert.throws(() => synth({ apiRateLimit: 0 }), /at least 1/);
  const integration = only('AWS::ApiGatewayV2::Integration').Properties;
  const apiId = logicalIdOf('AWS::Lambda::Function', (f) => f.Properties.FunctionName === 'test-boomerang-api');
  assert.deepEqual(integration.IntegrationUri, { 'Fn::GetAtt': [apiId, 'Arn'] });
});

test('Scheduler has its group and a role that may send to the timer queue only (and invoke the delivery function, for schedules of earlier releases)', () => {
  only('AWS::Scheduler::ScheduleGroup');
  const roleId = logicalIdOf('AWS::IAM::Role', (r) =>
    JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('scheduler.amazonaws.com'),
  );
  const policies = Object.values(resources('AWS::IAM::Policy')).filter((p: any) =>
    p.Properties.Roles.some((r: any) => r.Ref === roleId),
  );
  const statements = policies.flatMap((p: any) => p.Properties.PolicyDocument.Statement);
  const invoke = statements.filter((s: any) => [s.Action].flat().some((a: string) => a.startsWith('lambda:')));
  assert.equal(invoke.length, 1);
  assert.equal(invoke[0].Action, 'lambda:InvokeFunction');
  assert.match(JSON.stringify(invoke[0].Resource), /function:test-boomerang-delivery"/);
  const actions = statements.flatMap((s: any) => [s.Action].flat()).sort();
  assert.deepEqual(actions, ['lambda:InvokeFunction', 'sqs:SendMessage']);
  const send = statements.find((s: any) => s.Action === 'sqs:SendMessage');
  const queueOf = (suffix: string) =>
    logicalIdOf('AWS::SQS::Queue', (q) => q.Properties.QueueName === `test-boomerang-${suffix}`);
  assert.deepEqual(send.Resource, [
    { 'Fn::GetAtt': [queueOf('timer'), 'Arn'] },
    { 'Fn::GetAtt': [queueOf('system-failures'), 'Arn'] },
  ]);
  // What the functions give Scheduler as a minute's target: the timer queue.
  const delivery = logicalIdOf('AWS::Lambda::Function', (f) => f.Properties.FunctionName === 'test-boomerang-delivery');
  const env = (resources('AWS::Lambda::Function')[delivery] as any).Properties.Environment.Variables;
  assert.deepEqual(env.BOOMERANG_DELIVERY_FUNCTION_ARN, { 'Fn::GetAtt': [queueOf('timer'), 'Arn'] });
});

test('a function URL can replace the HTTP API', () => {
  const t = synth({ frontend: 'function-url' });
  t.resourceCountIs('AWS::ApiGatewayV2::Api', 0);
  t.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE' });
  template.resourceCountIs('AWS::Lambda::Url', 0);
  assert.ok(Object.keys(t.findOutputs('ApiUrl')).length === 1);
});

/** The event source mapping that reads the queue named `name` in `t`. */
const mappingOf = (t: Template, name: string) => {
  const queueId = Object.entries(t.findResources('AWS::SQS::Queue')).find(
    ([, q]) => (q as any).Properties.QueueName === `test-boomerang-${name}`,
  )![0];
  const all = Object.values(t.findResources('AWS::Lambda::EventSourceMapping')) as any[];
  const found = all.filter((m) => m.Properties.EventSourceArn['Fn::GetAtt'][0] === queueId);
  assert.equal(found.length, 1, `one mapping reads ${name}`);
  return found[0].Properties;
};

test('the timer queue feeds the delivery function with partial batch responses', () => {
  const esm = mappingOf(template, 'timer');
  assert.deepEqual(esm.FunctionResponseTypes, ['ReportBatchItemFailures']);
  assert.equal(esm.BatchSize, 10);
  const deliveryId = logicalIdOf('AWS::Lambda::Function', (f) => f.Properties.FunctionName === 'test-boomerang-delivery');
  assert.deepEqual(esm.FunctionName, { Ref: deliveryId });
  const timerId = logicalIdOf('AWS::SQS::Queue', (q) => q.Properties.QueueName === 'test-boomerang-timer');
  assert.deepEqual(esm.EventSourceArn, { 'Fn::GetAtt': [timerId, 'Arn'] });
  // A message whose delivery function died comes back after the visibility timeout: at
  // least the function's timeout, and not much longer, so the attempt is soon taken over.
  const timer = resources('AWS::SQS::Queue')[timerId] as any;
  const delivery = fnByName('delivery').Properties;
  assert.ok(timer.Properties.VisibilityTimeout >= delivery.Timeout);
  assert.ok(timer.Properties.VisibilityTimeout <= 3 * delivery.Timeout);
});

test('the slow lane is a queue of its own, read sixteen to a batch, that only the delivery function sends to', () => {
  const esm = mappingOf(template, 'slow');
  assert.deepEqual(esm.FunctionResponseTypes, ['ReportBatchItemFailures']);
  assert.equal(esm.BatchSize, 16);
  assert.equal(esm.MaximumBatchingWindowInSeconds, 1);
  assert.deepEqual(esm.ScalingConfig, { MaximumConcurrency: 100 });
  const deliveryId = logicalIdOf('AWS::Lambda::Function', (f) => f.Properties.FunctionName === 'test-boomerang-delivery');
  assert.deepEqual(esm.FunctionName, { Ref: deliveryId });
  const slowId = logicalIdOf('AWS::SQS::Queue', (q) => q.Properties.QueueName === 'test-boomerang-slow');
  const slow = resources('AWS::SQS::Queue')[slowId] as any;
  // Custody, as the timer queue's: failures go to system failures, and the queue is kept.
  const failuresId = logicalIdOf('AWS::SQS::Queue', (q) => q.Properties.QueueName === 'test-boomerang-system-failures');
  assert.deepEqual(slow.Properties.RedrivePolicy.deadLetterTargetArn, { 'Fn::GetAtt': [failuresId, 'Arn'] });
  assert.equal(slow.DeletionPolicy, 'Retain');
  const env = (name: string) => fnByName(name).Properties.Environment.Variables;
  assert.ok(env('delivery').BOOMERANG_SLOW_QUEUE_URL);
  assert.equal(env('api').BOOMERANG_SLOW_QUEUE_URL, undefined);
  // Who may send to it: the delivery function's role only.
  const senders = Object.entries(resources('AWS::IAM::Policy'))
    .filter(([, p]) =>
      ((p as any).Properties.PolicyDocument.Statement as any[]).some(
        (st) => st.Action === 'sqs:SendMessage' && JSON.stringify(st.Resource).includes(slowId),
      ),
    )
    .map(([, p]) => JSON.stringify((p as any).Properties.Roles));
  assert.equal(senders.length, 1);
  assert.ok(senders[0].includes('DeliveryRole'), senders[0]);
  // Lambda wants the reservation at least the two mappings' sum: a fifth of it by default.
  const reserved = synth({ deliveryReservedConcurrency: 40 });
  assert.deepEqual(mappingOf(reserved, 'slow').ScalingConfig, { MaximumConcurrency: 8 });
  assert.deepEqual(mappingOf(reserved, 'timer').ScalingConfig, { MaximumConcurrency: 32 });
  assert.throws(() => synth({ deliveryReservedConcurrency: 40, slowLaneMaxConcurrency: 100 }), /throttled/);
  assert.throws(() => synth({ deliveryReservedConcurrency: 40, deliveryMaxConcurrency: 40 }), /throttled/);
  assert.throws(
    () => synth({ deliveryReservedConcurrency: 40, slowLaneMaxConcurrency: 50, deliveryMinPollers: 2 }),
    /throttled/,
  );
  assert.throws(() => synth({ deliveryReservedConcurrency: 3 }), /at least 4/);
});

test('the timer mapping is capped at 500 batches by default, or set to provisioned pollers', () => {
  const esm = (t: Template) => mappingOf(t, 'timer');
  assert.deepEqual(esm(template).ScalingConfig, { MaximumConcurrency: DEFAULT_DELIVERY_MAX_CONCURRENCY });
  assert.equal(esm(template).ProvisionedPollerConfig, undefined);
  // Never above the function's reservation, which would throttle batches.
  assert.deepEqual(esm(synth({ deliveryReservedConcurrency: 40 })).ScalingConfig, { MaximumConcurrency: 32 });
  assert.throws(
    () => synth({ deliveryReservedConcurrency: 40, deliveryMaxConcurrency: 100 }),
    /throttled/,
  );
  assert.deepEqual(esm(synth({ deliveryMaxConcurrency: 1000 })).ScalingConfig, { MaximumConcurrency: 1000 });
  assert.throws(() => synth({ deliveryMaxConcurrency: 1 }), /2 to 1,000/);
  const provisioned = esm(synth({ deliveryMinPollers: 4 }));
  assert.deepEqual(provisioned.ProvisionedPollerConfig, { MinimumPollers: 4, MaximumPollers: 200 });
  assert.equal(provisioned.ScalingConfig, undefined);
  assert.throws(() => synth({ deliveryMinPollers: 4, deliveryMaxConcurrency: 50 }), /exclusive/);
  assert.throws(() => synth({ deliveryMinPollers: 1 }), /2 to 200/);
  // The API function's reservation is a parameter too; none by default.
  assert.equal(fnByName('api').Properties.ReservedConcurrentExecutions, undefined);
  synth({ apiReservedConcurrency: 100 }).hasResourceProperties('AWS::Lambda::Function', {
    FunctionName: 'test-boomerang-api',
    ReservedConcurrentExecutions: 100,
  });
});

test('async invocations of the delivery function are not retried and fail to a queue', () => {
  const config = only('AWS::Lambda::EventInvokeConfig').Properties;
  assert.equal(config.MaximumRetryAttempts, 0);
  const failuresId = logicalIdOf('AWS::SQS::Queue', (q) => q.Properties.QueueName === 'test-boomerang-system-failures');
  assert.deepEqual(config.DestinationConfig.OnFailure.Destination, { 'Fn::GetAtt': [failuresId, 'Arn'] });
});

test('the sweeper runs every minute', () => {
  const rule = only('AWS::Events::Rule').Properties;
  assert.equal(rule.ScheduleExpression, 'rate(1 minute)');
  const sweeperId = logicalIdOf('AWS::Lambda::Function', (f) => f.Properties.FunctionName === 'test-boomerang-sweeper');
  assert.deepEqual(rule.Targets[0].Arn, { 'Fn::GetAtt': [sweeperId, 'Arn'] });
});

test('no IAM statement has a wildcard action or a `*` resource', () => {
  const docs = [
    ...Object.values(resources('AWS::IAM::Policy')).map((p: any) => p.Properties.PolicyDocument),
    ...Object.values(resources('AWS::IAM::Role')).flatMap((r: any) =>
      (r.Properties.Policies ?? []).map((p: any) => p.PolicyDocument),
    ),
  ];
  assert.ok(docs.length > 0);
  for (const doc of docs) {
    for (const s of doc.Statement) {
      for (const action of [s.Action].flat()) {
        assert.ok(!action.includes('*'), `wildcard action ${action}`);
      }
      for (const resource of [s.Resource].flat()) {
        assert.notEqual(resource, '*', `statement ${JSON.stringify(s)} allows every resource`);
      }
    }
  }
  for (const role of Object.values(resources('AWS::IAM::Role')) as any[]) {
    assert.equal(role.Properties.ManagedPolicyArns, undefined, 'no managed policies');
  }
});

/** The statements of the policies on a function's role. */
const statementsOf = (name: string): any[] => {
  const fnRole = fnByName(name).Properties.Role['Fn::GetAtt'][0];
  return Object.values(resources('AWS::IAM::Policy'))
    .filter((p: any) => p.Properties.Roles.some((r: any) => r.Ref === fnRole))
    .flatMap((p: any) => p.Properties.PolicyDocument.Statement);
};
const allows = (s: any) => s.Effect !== 'Deny';

// Which calls each role allows is proven against the calls the functions make (the IAM
// check of tests/tests/aws_iam.rs); these are the shape's rules that hold whatever the calls.
test('each function reaches the table only by the keys it names', () => {
  for (const name of ['api', 'delivery', 'sweeper']) {
    const actions = new Set(statementsOf(name).filter(allows).flatMap((s: any) => [s.Action].flat()));
    for (const a of ['dynamodb:Scan', 'dynamodb:DeleteTable', 'scheduler:DeleteSchedule', 'sqs:PurgeQueue']) {
      assert.ok(!actions.has(a), `${name}: nobody needs ${a}`);
    }
    for (const s of statementsOf(name).filter(allows)) {
      const onTable = [s.Action].flat().some((a: string) => a.startsWith('dynamodb:'));
      if (!onTable) continue;
      const resources = [s.Resource].flat().map((r: any) => JSON.stringify(r));
      if (resources.some((r: string) => r.includes('/index/'))) {
        // Indexes by name, for Query only.
        assert.deepEqual([s.Action].flat(), ['dynamodb:Query'], name);
        assert.ok(!resources.some((r: string) => r.includes('/index/*')), `${name}: indexes by name`);
        continue;
      }
      assert.ok(s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'], `${name}: ${s.Sid} names its keys`);
      assert.deepEqual(s.Condition.Null, { 'dynamodb:LeadingKeys': 'false' }, `${name}: ${s.Sid} needs keys`);
    }
  }
});

test('no function may write an API key or a tenant, but the API rotates secrets', () => {
  const writes = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];
  for (const name of ['api', 'delivery', 'sweeper']) {
    for (const s of statementsOf(name).filter(allows)) {
      if (![s.Action].flat().some((a: string) => writes.includes(a))) continue;
      const keys: string[] = s.Condition['ForAllValues:StringLike']['dynamodb:LeadingKeys'];
      // `K#*#*` is a key's newest task; an API key (`K#<digest>`) has no second `#`.
      assert.ok(!keys.includes('K#*'), `${name}: ${s.Sid} may write API keys`);
      assert.ok(!keys.includes('REARM'), `${name}: only \`aws rearm\` writes its progress`);
      if (name === 'api') {
        for (const control of ['SWEEP', 'BUCKET']) {
          assert.ok(!keys.includes(control), `the API may write ${control}`);
        }
      }
      if (keys.includes('N#*')) {
        assert.equal(name, 'api', `${name} may write tenants`);
        assert.equal(s.Sid, 'RotateSigningSecrets');
        assert.deepEqual([s.Action].flat(), ['dynamodb:UpdateItem']);
        assert.deepEqual(s.Condition['ForAllValues:StringEquals'], {
          'dynamodb:Attributes': ['pk', 'sk', 'signing_secret', 'signing_secrets'],
        });
      }
    }
  }
});

test('queues and table are encrypted and log groups have retention', () => {
  for (const q of Object.values(resources('AWS::SQS::Queue')) as any[]) {
    assert.equal(q.Properties.SqsManagedSseEnabled, true);
  }
  assert.equal(Object.keys(resources('AWS::SQS::Queue')).length, 4);
  for (const g of Object.values(resources('AWS::Logs::LogGroup')) as any[]) {
    assert.ok(g.Properties.RetentionInDays > 0);
  }
});

test('the alarm topic is encrypted with a key CloudWatch may use, not the AWS-managed one', () => {
  const topic = only('AWS::SNS::Topic');
  const keyId = Object.keys(resources('AWS::KMS::Key'))[0];
  assert.deepEqual(topic.Properties.KmsMasterKeyId, { 'Fn::GetAtt': [keyId, 'Arn'] });
  assert.ok(!JSON.stringify(template.toJSON()).includes('alias/aws/sns'));
  const key = only('AWS::KMS::Key');
  assert.equal(key.Properties.EnableKeyRotation, true);
  const forCloudWatch = key.Properties.KeyPolicy.Statement.filter(
    (s: any) => s.Principal?.Service === 'cloudwatch.amazonaws.com',
  );
  assert.equal(forCloudWatch.length, 1);
  const actions = [forCloudWatch[0].Action].flat();
  assert.ok(actions.includes('kms:Decrypt') && actions.includes('kms:GenerateDataKey*'));
  assert.ok(forCloudWatch[0].Condition.StringEquals['aws:SourceAccount']);
});

test('alarms go to the SNS topic; e-mail only when asked', () => {
  const alarms = Object.values(resources('AWS::CloudWatch::Alarm')) as any[];
  const names = alarms.map((a) => a.Properties.AlarmName).sort();
  assert.deepEqual(
    names,
    [
      'api-5xx',
      'api-throttles',
      'bucket-check-failed',
      'by-key-index-write-throttles',
      'dead-letters',
      'dead-letters-age',
      'delivery-async-dropped',
      'delivery-destination-failures',
      'delivery-errors',
      'delivery-throttles',
      'due-index-write-throttles',
      'items-set-aside',
      'lateness-p99',
      'redrive-failed',
      'scheduler-dropped',
      'scheduler-target-errors',
      'slow-lane-age',
      'sweeper-errors',
      'sweeper-heartbeat',
      'sweeper-repairs',
      'sweeper-throttles',
      'system-failures',
      'system-failures-age',
      'table-read-throttles',
      'table-write-throttles',
      'timer-queue-age',
    ].map((n) => `test-boomerang-${n}`),
  );
  const byName = new Map(alarms.map((a) => [a.Properties.AlarmName.replace('test-boomerang-', ''), a.Properties]));
  // A silent sweeper is an alarm: no data counts as breaching.
  const heartbeat = byName.get('sweeper-heartbeat');
  assert.equal(heartbeat.ComparisonOperator, 'LessThanThreshold');
  assert.equal(heartbeat.TreatMissingData, 'breaching');
  // Queue ages against the 14-day retention, and the timer queue's longest wait.
  assert.equal(byName.get('system-failures-age').Threshold, 12 * 24 * 3600);
  assert.equal(byName.get('timer-queue-age').Threshold, 1200);
  assert.equal(byName.get('slow-lane-age').Threshold, 300);
  assert.equal(byName.get('lateness-p99').Threshold, 60000);
  for (const sustained of ['table-write-throttles', 'due-index-write-throttles', 'lateness-p99']) {
    assert.equal(byName.get(sustained).EvaluationPeriods, 3, sustained);
  }
  const topicId = Object.keys(resources('AWS::SNS::Topic'))[0];
  for (const a of alarms) {
    assert.deepEqual(a.Properties.AlarmActions, [{ Ref: topicId }]);
  }
  template.resourceCountIs('AWS::SNS::Subscription', 0);
  synth({ alarmEmail: 'ops@example.com' }).hasResourceProperties('AWS::SNS::Subscription', {
    Protocol: 'email',
    Endpoint: 'ops@example.com',
  });
});

test('the dashboard shows the task counts and attempt lateness p50 and p99', () => {
  const body = JSON.stringify(only('AWS::CloudWatch::Dashboard').Properties.DashboardBody);
  for (const m of ['Registered', 'Delivered', 'Retried', 'Failed', 'AttemptLateness']) {
    assert.ok(body.includes(m), m);
  }
  assert.ok(body.includes('p50') && body.includes('p99'));
});

test('metric filters turn the functions\' JSON lines into every metric the dashboard and alarms read', () => {
  const filters = Object.values(template.findResources('AWS::Logs::MetricFilter')) as any[];
  const byMetricAndGroup = new Map(
    filters.map((f) => [
      `${f.Properties.MetricTransformations[0].MetricName} ${f.Properties.LogGroupName.Ref.replace(/Logs.*/, '')}`,
      f.Properties,
    ]),
  );
  // Field names as shared/aws/src/metric_lines.rs writes them. The sweep's lines come
  // from the sweeper and from the delivery function's half-minute pass: one metric,
  // read from both log groups.
  const expected: [string, string, string, string, string][] = [
    ['Registered', 'Api', '{ $.registered > 0 }', '$.registered', 'Count'],
    ['Delivered', 'Delivery', '{ $.outcome = "succeeded" }', '1', 'Count'],
    ['Retried', 'Delivery', '{ $.outcome = "retrying" }', '1', 'Count'],
    ['Failed', 'Delivery', '{ $.outcome = "failed" }', '1', 'Count'],
    ['AttemptLateness', 'Delivery', '{ $.lateness_ms >= 0 }', '$.lateness_ms', 'Milliseconds'],
  ];
  for (const [metric, field] of [
    ['SweepRepaired', 'sweep_repaired'],
    ['BucketCheckFailed', 'bucket_check_failed'],
    ['RedriveFailed', 'redrive_failed'],
    ['ItemsSetAside', 'set_aside'],
  ]) {
    for (const group of ['Sweeper', 'Delivery']) {
      expected.push([metric, group, `{ $.${field} > 0 }`, `$.${field}`, 'Count']);
    }
  }
  assert.equal(filters.length, expected.length);
  for (const [metric, group, pattern, value, unit] of expected) {
    const f = byMetricAndGroup.get(`${metric} ${group}`);
    assert.ok(f, `${metric} is read from the ${group} function's logs`);
    assert.equal(f.FilterPattern, pattern);
    const t = f.MetricTransformations[0];
    assert.deepEqual([t.MetricNamespace, t.MetricValue, t.Unit], ['Boomerang', value, unit]);
  }
  // The sweeper's repair filter keeps its logical id (a new id would replace it).
  assert.ok(Object.keys(template.findResources('AWS::Logs::MetricFilter')).some((id) => id.startsWith('SweepRepairedMetric')));
});

test('outputs name the API URL, the table and the queues', () => {
  const outputs = Object.keys(template.findOutputs('*'));
  for (const o of ['ApiUrl', 'TableName', 'TimerQueueUrl', 'SlowQueueUrl', 'DeadLetterQueueUrl', 'SystemFailuresQueueUrl']) {
    assert.ok(outputs.includes(o), o);
  }
});

test('the table takes a warm throughput when asked, and none by default', () => {
  assert.equal(only('AWS::DynamoDB::Table').Properties.WarmThroughput, undefined);
  synth({ tableWarmWrites: 30000, tableWarmReads: 20000 }).hasResourceProperties(
    'AWS::DynamoDB::Table',
    { WarmThroughput: { WriteUnitsPerSecond: 30000, ReadUnitsPerSecond: 20000 } },
  );
  assert.throws(() => synth({ tableWarmWrites: 0 }), /at least 1/);
});

test('the delivery function runs in the VPC subnets given, managing only its own interfaces', () => {
  assert.equal(fnByName('delivery').Properties.VpcConfig, undefined, 'no VPC by default');
  const inVpc = synth({
    deliverySubnetIds: ['subnet-0a', 'subnet-0b'],
    deliverySecurityGroupIds: ['sg-0c'],
  });
  const fns = Object.values(inVpc.findResources('AWS::Lambda::Function')) as any[];
  const delivery = fns.find((f) => f.Properties.FunctionName === 'test-boomerang-delivery');
  assert.deepEqual(delivery.Properties.VpcConfig, {
    SubnetIds: ['subnet-0a', 'subnet-0b'],
    SecurityGroupIds: ['sg-0c'],
  });
  for (const other of fns.filter((f) => f !== delivery)) {
    assert.equal(other.Properties.VpcConfig, undefined, 'only the delivery function');
  }
  const statements = Object.values(inVpc.findResources('AWS::IAM::Policy')).flatMap(
    (p: any) => p.Properties.PolicyDocument.Statement,
  );
  for (const s of statements) {
    if ([s.Resource].flat().includes('*')) {
      assert.deepEqual([s.Action].flat().sort(), ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets']);
    }
  }
  assert.throws(() => synth({ deliverySubnetIds: ['subnet-0a'] }), /go together/);
});
