// Evaluates the AWS calls Boomerang's functions made in a test run against the functions'
// roles in a synthesized template, with an IAM policy evaluator (@cloud-copilot/iam-simulate):
//
//   node check-calls.mjs <template.json> <requests.json>
//
// <requests.json> lists authorization requests (see tests/src/iam_requests.rs): the
// function, the action, the resource by its part in the stack, the condition keys, and
// whether it must be allowed (a call the function made) or denied (a probe of what it must
// never do). The calls the Lambda service makes with a function's role (its event source
// mappings' reads, its on-failure destination, its logs) are added from the template.
//
// Fails when a call would be denied, a probe would be allowed, or a statement of a role
// grants an action that no request uses.

import { readFileSync } from 'node:fs';
import { runSimulation } from '@cloud-copilot/iam-simulate';

const ACCOUNT = '123456789012';
const REGION = 'us-east-1';
const PARTITION = 'aws';
const FUNCTIONS = ['api', 'delivery', 'sweeper'];

const [templatePath, requestsPath] = process.argv.slice(2);
if (!templatePath || !requestsPath) {
  console.error('usage: node check-calls.mjs <template.json> <requests.json>');
  process.exit(2);
}
const template = JSON.parse(readFileSync(templatePath, 'utf8'));
const resources = template.Resources;
const requests = JSON.parse(readFileSync(requestsPath, 'utf8'));

// ── The template's values, resolved as CloudFormation would in one account ──────────────

function physicalName(id) {
  const r = resources[id];
  const p = r.Properties ?? {};
  const name = {
    'AWS::DynamoDB::Table': p.TableName,
    'AWS::SQS::Queue': p.QueueName,
    'AWS::Lambda::Function': p.FunctionName,
    'AWS::Logs::LogGroup': p.LogGroupName,
    'AWS::Scheduler::ScheduleGroup': p.Name,
    'AWS::SNS::Topic': p.TopicName,
  }[r.Type];
  return name === undefined ? id : resolve(name);
}

function ref(id) {
  const pseudo = {
    'AWS::AccountId': ACCOUNT,
    'AWS::Region': REGION,
    'AWS::Partition': PARTITION,
    'AWS::URLSuffix': 'amazonaws.com',
    'AWS::StackName': 'Boomerang-ci',
  };
  if (id in pseudo) return pseudo[id];
  const r = resources[id];
  if (!r) throw new Error(`Ref to ${id}, which the template does not have`);
  if (r.Type === 'AWS::SQS::Queue') return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${physicalName(id)}`;
  if (r.Type === 'AWS::SNS::Topic') return getAtt(id, 'TopicArn');
  return physicalName(id);
}

function getAtt(id, attribute) {
  const r = resources[id];
  if (!r) throw new Error(`GetAtt of ${id}, which the template does not have`);
  const name = physicalName(id);
  const arn = (service, resource, region = REGION) =>
    `arn:${PARTITION}:${service}:${region}:${ACCOUNT}:${resource}`;
  const arns = {
    'AWS::DynamoDB::Table': () => arn('dynamodb', `table/${name}`),
    'AWS::SQS::Queue': () => arn('sqs', name),
    'AWS::IAM::Role': () => arn('iam', `role/${name}`, ''),
    'AWS::Lambda::Function': () => arn('lambda', `function:${name}`),
    'AWS::Logs::LogGroup': () => arn('logs', `log-group:${name}:*`),
    'AWS::SNS::Topic': () => arn('sns', name),
    'AWS::KMS::Key': () => arn('kms', `key/${id}`),
    'AWS::Scheduler::ScheduleGroup': () => arn('scheduler', `schedule-group/${name}`),
  };
  if (attribute === 'Arn' || attribute === 'TopicArn') {
    if (!arns[r.Type]) throw new Error(`no ARN known for ${r.Type}`);
    return arns[r.Type]();
  }
  if (attribute === 'QueueName') return name;
  if (attribute === 'QueueUrl') return ref(id);
  throw new Error(`GetAtt ${id}.${attribute} is not known here`);
}

function resolve(value) {
  if (Array.isArray(value)) return value.map(resolve);
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  if (keys.length === 1) {
    const [k] = keys;
    const v = value[k];
    if (k === 'Ref') return ref(v);
    if (k === 'Fn::GetAtt') return getAtt(...(Array.isArray(v) ? v : v.split('.')));
    if (k === 'Fn::Join') return resolve(v[1]).join(v[0]);
    if (k === 'Fn::Select') return resolve(v[1])[Number(resolve(v[0]))];
    if (k === 'Fn::Split') return resolve(v[1]).split(v[0]);
    if (k === 'Fn::Sub') {
      const [text, vars] = Array.isArray(v) ? v : [v, {}];
      return text.replace(/\$\{([^}]+)\}/g, (_, name) => {
        if (vars[name] !== undefined) return resolve(vars[name]);
        const [id, attribute] = name.split('.');
        return attribute ? getAtt(id, attribute) : ref(id);
      });
    }
  }
  return Object.fromEntries(keys.map((k) => [k, resolve(value[k])]));
}

const ofType = (type) => Object.entries(resources).filter(([, r]) => r.Type === type);
const roleOf = (resource) => resource.Properties.Role['Fn::GetAtt'][0];

// The functions, their roles and every policy attached to them.
const functions = {};
for (const [id, r] of ofType('AWS::Lambda::Function')) {
  const name = resolve(r.Properties.FunctionName);
  const short = FUNCTIONS.find((f) => name.endsWith(`-boomerang-${f}`));
  if (short) functions[short] = { id, name, role: roleOf(r), logGroup: resolve(r.Properties.LoggingConfig?.LogGroup) };
}
for (const f of FUNCTIONS) {
  if (!functions[f]) throw new Error(`the template has no ${f} function`);
}
function policiesOf(roleId) {
  const role = resources[roleId];
  if ((role.Properties.ManagedPolicyArns ?? []).length > 0) {
    throw new Error(`${roleId} has managed policies, which this check cannot read`);
  }
  const inline = (role.Properties.Policies ?? []).map((p) => ({ name: p.PolicyName, policy: resolve(p.PolicyDocument) }));
  const attached = ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles ?? []).some((r) => r.Ref === roleId))
    .map(([id, p]) => ({ name: id, policy: resolve(p.Properties.PolicyDocument) }));
  return [...inline, ...attached];
}

// ── Requests: the resource each names, and the Lambda service's own ─────────────────────

const table = ofType('AWS::DynamoDB::Table');
if (table.length !== 1) throw new Error('expected one table');
const tableArn = getAtt(table[0][0], 'Arn');
const queueArn = (part) => {
  const found = ofType('AWS::SQS::Queue').find(([id]) => physicalName(id).endsWith(`-boomerang-${part}`));
  if (!found) throw new Error(`the template has no ${part} queue`);
  return getAtt(found[0], 'Arn');
};
const group = ofType('AWS::Scheduler::ScheduleGroup')[0];
const schedulerRole = ofType('AWS::IAM::Role').find(([, r]) =>
  JSON.stringify(r.Properties.AssumeRolePolicyDocument).includes('scheduler.amazonaws.com'),
);
function arnOf(resource) {
  if (resource === 'table') return tableArn;
  if (resource === 'scheduler_role') return getAtt(schedulerRole[0], 'Arn');
  if (resource.index) return `${tableArn}/index/${resource.index}`;
  if (resource.queue) return queueArn(resource.queue);
  if (resource.schedule) {
    return `arn:${PARTITION}:scheduler:${REGION}:${ACCOUNT}:schedule/${physicalName(group[0])}/${resource.schedule}`;
  }
  throw new Error(`unknown resource ${JSON.stringify(resource)}`);
}

const all = requests.map((r) => ({ ...r, arn: arnOf(r.resource) }));
const functionOfRef = (value) => {
  const name = resolve(value);
  return FUNCTIONS.find((f) => name === functions[f].name || name === getAtt(functions[f].id, 'Arn'));
};
// An SQS event source mapping reads with the function's role (AWS documents these three).
for (const [, m] of ofType('AWS::Lambda::EventSourceMapping')) {
  const fn = functionOfRef(m.Properties.FunctionName);
  const arn = resolve(m.Properties.EventSourceArn);
  for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) {
    all.push({ function: fn, action, arn, context: {}, expect: 'allow', about: 'the event source mapping' });
  }
}
// An asynchronous invocation's on-failure destination is sent to with the function's role.
for (const [, c] of ofType('AWS::Lambda::EventInvokeConfig')) {
  const fn = functionOfRef(c.Properties.FunctionName);
  const destination = resolve(c.Properties.DestinationConfig?.OnFailure?.Destination);
  if (destination) {
    all.push({ function: fn, action: 'sqs:SendMessage', arn: destination, context: {}, expect: 'allow', about: 'the on-failure destination' });
  }
}
// Lambda writes each function's logs to its log group with the function's role.
for (const f of FUNCTIONS) {
  const logGroup = functions[f].logGroup;
  const stream = `arn:${PARTITION}:logs:${REGION}:${ACCOUNT}:log-group:${logGroup}:log-stream:2026/11/28/[$LATEST]0123`;
  for (const action of ['logs:CreateLogStream', 'logs:PutLogEvents']) {
    all.push({ function: f, action, arn: stream, context: {}, expect: 'allow', about: 'the function\'s logs' });
  }
}

// ── Evaluation ──────────────────────────────────────────────────────────────────────────

async function decide(request, policies) {
  const result = await runSimulation(
    {
      request: {
        principal: getAtt(functions[request.function].role, 'Arn'),
        action: request.action,
        resource: { resource: request.arn, accountId: ACCOUNT },
        contextVariables: request.context,
      },
      identityPolicies: policies,
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (result.resultType === 'error') {
    throw new Error(`cannot evaluate ${describe(request)}: ${JSON.stringify(result.errors)}`);
  }
  return result.overallResult;
}

function describe(r) {
  const keys = r.context['dynamodb:LeadingKeys'];
  const attributes = r.context['dynamodb:Attributes'];
  return `${r.function}: ${r.action} on ${r.arn}` +
    (keys ? ` keys ${JSON.stringify(keys)}` : '') +
    (attributes ? ` attributes ${JSON.stringify(attributes)}` : '') +
    ` (${r.about})`;
}

const problems = [];
let allowed = 0;
let denied = 0;
const allowedRequests = [];
for (const request of all) {
  const policies = policiesOf(functions[request.function].role);
  const decision = await decide(request, policies);
  if (request.expect === 'allow') {
    if (decision === 'Allowed') {
      allowed += 1;
      allowedRequests.push(request);
    } else {
      problems.push(`denied (${decision}), but the function makes this call: ${describe(request)}`);
    }
  } else if (decision === 'Allowed') {
    problems.push(`allowed, but must be denied: ${describe(request)}`);
  } else {
    denied += 1;
  }
}

// Every action of every Allow statement is used by at least one call it allows alone.
let grants = 0;
for (const f of FUNCTIONS) {
  for (const { name, policy } of policiesOf(functions[f].role)) {
    for (const [i, statement] of (policy.Statement ?? []).entries()) {
      if (statement.Effect !== 'Allow') continue;
      const actions = [statement.Action].flat();
      for (const action of actions) {
        grants += 1;
        const alone = [{ name: 'alone', policy: { Version: '2012-10-17', Statement: [{ ...statement, Action: action }] } }];
        let used = false;
        for (const request of allowedRequests.filter((r) => r.function === f && matchesAction(action, r.action))) {
          if ((await decide(request, alone)) === 'Allowed') {
            used = true;
            break;
          }
        }
        if (!used) {
          problems.push(`${f}: ${name} statement ${i} grants ${action} on ${JSON.stringify(statement.Resource)}, and no call uses it`);
        }
      }
    }
  }
}

// Key patterns are reported, not failed on: a statement's pattern that no call in the run
// used is a path the scenario did not take (an owed alert, say), listed so a reader sees
// what the run did not prove.
const unseen = [];
for (const f of FUNCTIONS) {
  for (const { policy } of policiesOf(functions[f].role)) {
    for (const statement of policy.Statement ?? []) {
      const patterns = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
      if (statement.Effect !== 'Allow' || !patterns) continue;
      const actions = [statement.Action].flat();
      const keysUsed = allowedRequests
        .filter((r) => r.function === f && actions.includes(r.action))
        .flatMap((r) => r.context['dynamodb:LeadingKeys'] ?? []);
      for (const pattern of patterns) {
        const re = wildcard(pattern);
        if (!keysUsed.some((k) => re.test(k))) unseen.push(`${f} ${statement.Sid ?? ''} ${pattern}`);
      }
    }
  }
}

function matchesAction(pattern, action) {
  return wildcard(pattern, 'i').test(action);
}

/** An IAM pattern (`*` any run of characters, `?` any one) as a regular expression. */
function wildcard(pattern, flags = '') {
  const escaped = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${escaped.replace(/\*/g, '.*').replace(/\?/g, '.')}$`, flags);
}

const byFunction = FUNCTIONS.map((f) => `${f} ${all.filter((r) => r.function === f && r.expect === 'allow').length}`);
console.log(`IAM check of ${templatePath}`);
console.log(`${allowed} calls allowed (by function: ${byFunction.join(', ')}); ${grants} granted actions each used`);
console.log(`${denied} probes denied as they must be`);
if (unseen.length > 0) {
  console.log(`key patterns granted that no call of this run used (${unseen.length}): ${unseen.join('; ')}`);
}
if (problems.length > 0) {
  console.log(`\n${problems.length} problem(s):`);
  for (const p of problems) console.log(`- ${p}`);
  process.exit(1);
}
