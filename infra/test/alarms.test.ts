// Every alarm reaches someone: each alarm in the synthesized template is followed to its
// actions, each action to its SNS topic, the topic to its policy (which replaces SNS's
// default one, so it must let CloudWatch publish) and to its KMS key (whose policy must let
// CloudWatch use it to encrypt the message). The policies are evaluated for the request
// CloudWatch makes for that alarm: its own account, the alarm's ARN as the source, over TLS.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { BoomerangStack, BoomerangStackProps, METRICS_NAMESPACE } from '../lib/boomerang-stack';

const noZips = path.join(os.tmpdir(), 'boomerang-no-zips');

function synth(extra: Partial<BoomerangStackProps> = {}): Record<string, any> {
  const app = new App();
  const stack = new BoomerangStack(app, 'Test', { stage: 'test', assetDir: noZips, ...extra });
  return Template.fromStack(stack).toJSON().Resources;
}

// The pseudo parameters, as a deployment in one account and region would have them.
const ACCOUNT = '111122223333';
const pseudo: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'eu-west-1',
  'AWS::AccountId': ACCOUNT,
};

/** A template value with its pseudo parameters filled in; other references stay objects. */
function value(v: any): any {
  if (typeof v === 'string') return v;
  if (v && typeof v.Ref === 'string' && pseudo[v.Ref]) return pseudo[v.Ref];
  if (v && v['Fn::Join']) {
    const [sep, parts] = v['Fn::Join'];
    const vals = parts.map(value);
    if (vals.every((p: any) => typeof p === 'string')) return vals.join(sep);
  }
  return v;
}

/** IAM's `*` and `?` wildcards, case-sensitive as in ARNs. */
function globMatches(pattern: string, s: string, caseInsensitive = false): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`, caseInsensitive ? 'i' : '').test(s);
}

/** The request CloudWatch makes to publish an alarm's state change. */
interface Request {
  action: string;
  /** The resource, as a template reference (a topic's `Ref`) or a literal. */
  resource: any;
  context: Record<string, string>;
}

const list = (v: any): any[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function principalCovers(principal: any, service: string): boolean {
  if (principal === '*') return true;
  if (principal?.AWS === '*') return true;
  return list(principal?.Service).includes(service);
}

function actionCovers(actions: any, action: string): boolean {
  return list(actions).some((a: string) => globMatches(a, action, true));
}

function resourceCovers(resources: any, resource: any): boolean {
  return list(resources).some(
    (r: any) => r === '*' || JSON.stringify(value(r)) === JSON.stringify(value(resource)),
  );
}

/**
 * Whether the statement's conditions hold for the request. `unknown` says what an
 * operator this evaluator does not know counts as: false for an Allow (it grants
 * nothing provable), true for a Deny (it may block).
 */
function conditionsHold(condition: any, context: Record<string, string>, unknown: boolean): boolean {
  for (const [operator, keys] of Object.entries<any>(condition ?? {})) {
    for (const [key, expected] of Object.entries<any>(keys)) {
      const actual = context[key];
      const wanted = list(expected).map(value);
      let holds: boolean;
      switch (operator) {
        case 'StringEquals':
          holds = actual !== undefined && wanted.includes(actual);
          break;
        case 'ArnLike':
        case 'StringLike':
          holds = actual !== undefined && wanted.some((w) => typeof w === 'string' && globMatches(w, actual));
          break;
        case 'Bool':
          // An absent key does not match a Bool condition.
          holds = actual !== undefined && wanted.map(String).includes(actual);
          break;
        default:
          holds = unknown;
      }
      if (!holds) return false;
    }
  }
  return true;
}

/** Whether a policy document allows the request from the service, and no Deny stops it. */
function allows(doc: any, service: string, req: Request): { allowed: boolean; why: string } {
  const applies = (s: any, unknown: boolean) =>
    principalCovers(s.Principal, service) &&
    actionCovers(s.Action, req.action) &&
    resourceCovers(s.Resource, req.resource) &&
    conditionsHold(s.Condition, req.context, unknown);
  const statements = list(doc.Statement);
  const deny = statements.find((s) => s.Effect === 'Deny' && applies(s, true));
  if (deny) return { allowed: false, why: `denied by ${JSON.stringify(deny)}` };
  const allow = statements.find((s) => s.Effect === 'Allow' && applies(s, false));
  return allow ? { allowed: true, why: '' } : { allowed: false, why: 'no statement allows it' };
}

/** Follows each alarm to the topics and keys it publishes through; fails on any gap. */
function assertEveryAlarmReachesItsTopic(resources: Record<string, any>) {
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const alarms = ofType('AWS::CloudWatch::Alarm');
  assert.ok(alarms.length > 0, 'the stack has alarms');
  for (const [alarmId, alarm] of alarms) {
    const name: string = alarm.Properties.AlarmName;
    const actions = list(alarm.Properties.AlarmActions);
    assert.ok(actions.length >= 1, `${alarmId} (${name}) has an action`);
    const sourceArn = `arn:aws:cloudwatch:eu-west-1:${ACCOUNT}:alarm:${name}`;
    const context = {
      'aws:SourceAccount': ACCOUNT,
      'aws:SourceArn': sourceArn,
      // CloudWatch publishes over TLS.
      'aws:SecureTransport': 'true',
    };
    for (const action of actions) {
      const topicId = action.Ref;
      const topic = resources[topicId];
      assert.equal(topic?.Type, 'AWS::SNS::Topic', `${name}: its action ${JSON.stringify(action)} is a topic of the stack`);
      // A topic's policy replaces SNS's default one, and two policies on one topic
      // would overwrite each other: exactly one.
      const policies = ofType('AWS::SNS::TopicPolicy').filter(([, p]) =>
        list(p.Properties.Topics).some((t: any) => t.Ref === topicId),
      );
      assert.equal(policies.length, 1, `${name}: topic ${topicId} has one policy`);
      const publish = allows(policies[0][1].Properties.PolicyDocument, 'cloudwatch.amazonaws.com', {
        action: 'sns:Publish',
        resource: { Ref: topicId },
        context,
      });
      assert.ok(publish.allowed, `${name}: CloudWatch may publish to ${topicId}: ${publish.why}`);
      // The same request from another account's alarm, or from an alarm of another stack,
      // is not allowed.
      for (const [key, other] of [
        ['aws:SourceAccount', '444455556666'],
        ['aws:SourceArn', `arn:aws:cloudwatch:eu-west-1:${ACCOUNT}:alarm:other-app-${name}`],
      ]) {
        const foreign = allows(policies[0][1].Properties.PolicyDocument, 'cloudwatch.amazonaws.com', {
          action: 'sns:Publish',
          resource: { Ref: topicId },
          context: { ...context, [key]: other },
        });
        assert.ok(!foreign.allowed, `${name}: a request with ${key} ${other} is refused`);
      }
      // An encrypted topic: CloudWatch must be able to use its key.
      const keyRef = topic.Properties.KmsMasterKeyId;
      assert.ok(keyRef, `${name}: topic ${topicId} is encrypted`);
      const keyId = keyRef['Fn::GetAtt']?.[0] ?? keyRef.Ref;
      const key = resources[keyId];
      assert.equal(key?.Type, 'AWS::KMS::Key', `${name}: the topic's key is a key of the stack`);
      for (const kmsAction of ['kms:Decrypt', 'kms:GenerateDataKey']) {
        const use = allows(key.Properties.KeyPolicy, 'cloudwatch.amazonaws.com', {
          action: kmsAction,
          resource: '*',
          context,
        });
        assert.ok(use.allowed, `${name}: CloudWatch may ${kmsAction} with ${keyId}: ${use.why}`);
      }
    }
  }
}

test('each alarm publishes to a topic whose policy and key let CloudWatch publish for it', () => {
  assertEveryAlarmReachesItsTopic(synth());
});

test('so does each alarm of the variants: e-mail, function URL, delivery in a VPC', () => {
  for (const props of [
    { alarmEmail: 'ops@example.com' },
    { frontend: 'function-url' as const },
    {
      deliverySubnetIds: ['subnet-0123456789abcdef0'],
      deliverySecurityGroupIds: ['sg-0123456789abcdef0'],
    },
  ]) {
    assertEveryAlarmReachesItsTopic(synth(props));
  }
});

test('the walk fails a topic policy without the CloudWatch statement, and a key without its grant', () => {
  const withoutPublish = synth();
  for (const r of Object.values(withoutPublish)) {
    if (r.Type === 'AWS::SNS::TopicPolicy') {
      r.Properties.PolicyDocument.Statement = r.Properties.PolicyDocument.Statement.filter(
        (s: any) => s.Effect === 'Deny',
      );
    }
  }
  assert.throws(() => assertEveryAlarmReachesItsTopic(withoutPublish), /may publish/);
  const withoutKeyGrant = synth();
  for (const r of Object.values(withoutKeyGrant)) {
    if (r.Type === 'AWS::KMS::Key') {
      r.Properties.KeyPolicy.Statement = r.Properties.KeyPolicy.Statement.filter(
        (s: any) => !JSON.stringify(s.Principal).includes('cloudwatch'),
      );
    }
  }
  assert.throws(() => assertEveryAlarmReachesItsTopic(withoutKeyGrant), /kms:Decrypt/);
  // A Deny that is not limited to plain HTTP blocks CloudWatch too.
  const denied = synth();
  for (const r of Object.values(denied)) {
    if (r.Type === 'AWS::SNS::TopicPolicy') {
      for (const s of r.Properties.PolicyDocument.Statement) {
        if (s.Effect === 'Deny') delete s.Condition;
      }
    }
  }
  assert.throws(() => assertEveryAlarmReachesItsTopic(denied), /denied by/);
});

test('the topic allows CloudWatch only for this stack\'s alarms, in its account', () => {
  const resources = synth();
  const policy = Object.values(resources).find((r) => r.Type === 'AWS::SNS::TopicPolicy');
  const forCloudWatch = policy.Properties.PolicyDocument.Statement.filter(
    (s: any) => s.Effect === 'Allow',
  );
  assert.equal(forCloudWatch.length, 1, 'one Allow, for CloudWatch');
  const [s] = forCloudWatch;
  assert.deepEqual(s.Principal, { Service: 'cloudwatch.amazonaws.com' });
  assert.equal(s.Action, 'sns:Publish');
  assert.deepEqual(s.Condition.StringEquals, { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } });
  assert.equal(
    value(s.Condition.ArnLike['aws:SourceArn']),
    `arn:aws:cloudwatch:eu-west-1:${ACCOUNT}:alarm:test-boomerang-*`,
  );
  // The key's grant to CloudWatch is held to the same alarms.
  const key = Object.values(resources).find((r) => r.Type === 'AWS::KMS::Key');
  const keyGrant = key.Properties.KeyPolicy.Statement.find((st: any) =>
    JSON.stringify(st.Principal).includes('cloudwatch'),
  );
  assert.deepEqual(keyGrant.Condition, s.Condition);
  // Every alarm's name is under that prefix.
  for (const r of Object.values(resources)) {
    if (r.Type === 'AWS::CloudWatch::Alarm') {
      assert.ok(r.Properties.AlarmName.startsWith('test-boomerang-'), r.Properties.AlarmName);
    }
  }
});

test('the sweep\'s failures and the delivery function\'s asynchronous losses have alarms', () => {
  const resources = synth();
  const alarms = new Map(
    Object.values(resources)
      .filter((r) => r.Type === 'AWS::CloudWatch::Alarm')
      .map((r) => [r.Properties.AlarmName.replace('test-boomerang-', ''), r.Properties]),
  );
  for (const [name, metric] of [
    ['sweeper-repairs', 'SweepRepaired'],
    ['bucket-check-failed', 'BucketCheckFailed'],
    ['redrive-failed', 'RedriveFailed'],
    ['items-set-aside', 'ItemsSetAside'],
  ]) {
    const a = alarms.get(name);
    assert.ok(a, name);
    // No dimensions: the metric sums the sweeper's lines and the delivery function's.
    assert.deepEqual(
      [a.Namespace, a.MetricName, a.Statistic, a.Dimensions],
      [METRICS_NAMESPACE, metric, 'Sum', undefined],
      name,
    );
    assert.equal(a.Threshold, 0);
    assert.equal(a.ComparisonOperator, 'GreaterThanThreshold');
    assert.ok(a.AlarmDescription.length > 80, `${name} tells an operator what to do`);
  }
  const deliveryId = Object.entries(resources).find(
    ([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.FunctionName === 'test-boomerang-delivery',
  )![0];
  for (const [name, metric] of [
    ['delivery-destination-failures', 'DestinationDeliveryFailures'],
    ['delivery-async-dropped', 'AsyncEventsDropped'],
  ]) {
    const a = alarms.get(name);
    assert.ok(a, name);
    assert.deepEqual([a.Namespace, a.MetricName, a.Statistic], ['AWS/Lambda', metric, 'Sum'], name);
    assert.deepEqual(a.Dimensions, [{ Name: 'FunctionName', Value: { Ref: deliveryId } }]);
    assert.equal(a.Threshold, 0);
    assert.match(a.AlarmDescription, /rearm/);
  }
});
