// What each function's role may do: the table's items by the leading part of their
// partition keys, the indexes by name, the queues, the schedule group and the Scheduler
// role to pass. Kept apart from the stack so that the grants can be read, and checked
// against the calls the functions make, in one place: a test runs every kind of call each
// function makes on an emulator, records them, and evaluates them against these roles in
// the synthesized template (tests/tests/aws_iam.rs); it fails on a call a role would
// deny and on a granted action no call uses.
//
// The key layout is `shared/aws/src/keys.rs`. Patterns: `T#*` is a prefix; `BULK`,
// `SWEEP` and `BUCKET` are whole keys; `K#*#*` is a key's newest task (`K#<tenant>#<key>`),
// which an API key (`K#<sha-256 hex>`, no second `#`) never matches.

import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';

type FunctionName = 'api' | 'delivery' | 'sweeper';
type QueueName = 'timer' | 'slow' | 'deadLetters' | 'systemFailures';

export interface FunctionAccess {
  readonly functions: Record<FunctionName, lambda.Function>;
  readonly table: dynamodb.Table;
  readonly queues: Record<QueueName, sqs.Queue>;
  /** The ARNs of the schedules in the group (`…:schedule/<group>/*`). */
  readonly scheduleArns: string;
  /** The role Scheduler invokes with, which the functions pass to it. */
  readonly schedulerRole: iam.Role;
}

/** What a function does to the table: partition-key patterns per kind of access. */
interface TableAccess {
  /** GetItem, BatchGetItem and Query of the table. */
  readonly read: string[];
  readonly put: string[];
  readonly update: string[];
  readonly delete: string[];
  readonly batchWrite: string[];
  /** Indexes it queries, by name (`table-layout.json`). */
  readonly indexes: string[];
}

/** What a function does with the queues and the schedule group. */
interface MessageAccess {
  readonly send: QueueName[];
  /** Read and deleted by the function's own code (not an event source mapping). */
  readonly receive: QueueName[];
  /** Read by an event source mapping, with the function's role. */
  readonly mapped: QueueName[];
  /** Creates minutes' schedules (and passes the Scheduler role to them). */
  readonly schedules: boolean;
}

/**
 * The table, by function. Tenants (`N#`) and API keys (`K#<digest>`) are minted and changed
 * by operators with their own credentials; the one tenant write a function makes is the
 * API's rotation of the tenant's signing secrets (`tenantSecrets` below). The sweep's
 * checkpoint (`SWEEP`) and the record of the minutes' fires and checks (`BUCKET`) are
 * written by the sweeper and the delivery function's sweep passes and fires, never by the
 * API; `REARM` is written only by `boomerang aws rearm`, with the operator's credentials.
 */
const TABLE: Record<FunctionName, TableAccess> = {
  api: {
    // `READY` is the readiness probe's item (read, never written).
    read: [
      'T#*', 'I#*', 'K#*', 'N#*', 'P#*', 'TM#*', 'BS#*', 'BR#*', 'S#*', 'BJ#*', 'BULK',
      'OK#*', 'OL#*', 'F#*', 'FL#*', 'M#*', 'READY',
    ],
    // A bulk job's marker (`BULK`) is the sweeper's list of jobs to run: the API writes it
    // when it starts a job, as it writes the job itself.
    put: [
      'T#*', 'I#*', 'K#*#*', 'P#*', 'TM#*', 'BS#*', 'BR#*', 'S#*', 'BJ#*', 'BULK', 'OL#*',
      'FL#*', 'M#*',
    ],
    update: ['T#*', 'OK#*'],
    // Named policies and templates, schedules, a paused flow's mark, and a place in an
    // order line that a canceled or replaced task gives up.
    delete: ['P#*', 'TM#*', 'S#*', 'FL#*', 'OL#*'],
    // Resuming a flow takes the tasks waiting in it.
    batchWrite: ['F#*'],
    indexes: ['by_key'],
  },
  delivery: {
    read: ['T#*', 'I#*', 'N#*', 'P#*', 'BS#*', 'BR#*', 'S#*', 'OK#*', 'OL#*', 'F#*', 'FL#*', 'D#*', 'M#*', 'SWEEP'],
    // Alerts and schedules' occurrences are tasks it registers (an occurrence with an
    // order key takes its place in the line); flows' and destinations' slots and
    // windows; a minute's schedule record and fire; its half-minute sweep pass's
    // checkpoint.
    put: ['T#*', 'I#*', 'OL#*', 'F#*', 'FL#*', 'D#*', 'M#*', 'BUCKET', 'SWEEP'],
    update: ['T#*', 'OK#*', 'F#*'],
    delete: ['F#*', 'D#*', 'OL#*'],
    batchWrite: [],
    indexes: ['due'],
  },
  sweeper: {
    read: ['T#*', 'N#*', 'BJ#*', 'BULK', 'OK#*', 'OL#*', 'M#*', 'BUCKET', 'SWEEP'],
    // Bulk jobs and their marker; the checkpoint and the minutes checked; an alert it
    // raises that was owed (a task and its idempotency key); and what a bulk job does to
    // an ordered task (a retried one takes a place in its line again, a canceled one
    // gives its place up), and to a held one released far ahead (its minute's record).
    put: ['T#*', 'I#*', 'OL#*', 'BJ#*', 'BULK', 'BUCKET', 'SWEEP', 'M#*'],
    update: ['T#*', 'OK#*'],
    delete: ['OL#*'],
    batchWrite: [],
    // `by_key`: a bulk job that selects by business key.
    indexes: ['due', 'by_key'],
  },
};

const MESSAGES: Record<FunctionName, MessageAccess> = {
  // Registrations arm timers and minutes' schedules.
  api: { send: ['timer'], receive: [], mapped: [], schedules: true },
  // Attempts arm the next one, hand slow calls to the slow lane, and dead-letter what is
  // exhausted; Scheduler's failed invocations go to system failures (the on-failure
  // destination, sent with this role).
  delivery: {
    send: ['timer', 'slow', 'deadLetters', 'systemFailures'],
    receive: [],
    mapped: ['timer', 'slow'],
    schedules: true,
  },
  // The sweep re-arms and sends dead letters owed; the redrive hands failed timers back;
  // a bulk release of held tasks due far ahead makes their minutes' schedules.
  sweeper: { send: ['timer', 'deadLetters'], receive: ['systemFailures'], mapped: [], schedules: true },
};

/**
 * The tenant attributes the API's secret rotation writes (`shared/aws/src/attr.rs`,
 * `tenant::SIGNING_SECRET(S)`), with the item's keys: nothing else of a tenant's item.
 */
const TENANT_SECRETS = ['pk', 'sk', 'signing_secret', 'signing_secrets'];

/** The actions an SQS event source mapping reads with (AWS documents these three). */
const MAPPING_ACTIONS = ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'];

export function grantFunctionAccess(a: FunctionAccess): void {
  for (const name of ['api', 'delivery', 'sweeper'] as const) {
    const role = a.functions[name];
    grantTable(role, a.table, TABLE[name]);
    grantMessages(role, a, MESSAGES[name]);
  }
  a.functions.api.addToRolePolicy(
    new iam.PolicyStatement({
      sid: 'RotateSigningSecrets',
      actions: ['dynamodb:UpdateItem'],
      resources: [a.table.tableArn],
      conditions: {
        'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['N#*'] },
        'ForAllValues:StringEquals': { 'dynamodb:Attributes': TENANT_SECRETS },
        Null: { 'dynamodb:LeadingKeys': 'false' },
      },
    }),
  );
}

function grantTable(fn: lambda.Function, table: dynamodb.Table, access: TableAccess) {
  const statement = (sid: string, actions: string[], keys: string[]) => {
    if (keys.length === 0) return;
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid,
        actions,
        resources: [table.tableArn],
        // Every key a request names must match (ForAllValues), and a request must name
        // one: ForAllValues alone holds for a request with none.
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': keys },
          Null: { 'dynamodb:LeadingKeys': 'false' },
        },
      }),
    );
  };
  statement('ReadItems', ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'], access.read);
  statement('PutItems', ['dynamodb:PutItem'], access.put);
  statement('UpdateItems', ['dynamodb:UpdateItem'], access.update);
  statement('DeleteItems', ['dynamodb:DeleteItem'], access.delete);
  statement('BatchWriteItems', ['dynamodb:BatchWriteItem'], access.batchWrite);
  if (access.indexes.length > 0) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'QueryIndexes',
        actions: ['dynamodb:Query'],
        resources: access.indexes.map((index) => `${table.tableArn}/index/${index}`),
      }),
    );
  }
}

function grantMessages(fn: lambda.Function, a: FunctionAccess, access: MessageAccess) {
  const arns = (queues: QueueName[]) => queues.map((q) => a.queues[q].queueArn);
  if (access.send.length > 0) {
    fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'SendMessages', actions: ['sqs:SendMessage'], resources: arns(access.send) }));
  }
  if (access.receive.length > 0) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'ReceiveMessages',
        actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage'],
        resources: arns(access.receive),
      }),
    );
  }
  if (access.mapped.length > 0) {
    fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'EventSourceMappings', actions: MAPPING_ACTIONS, resources: arns(access.mapped) }));
  }
  if (access.schedules) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({ sid: 'CreateSchedules', actions: ['scheduler:CreateSchedule'], resources: [a.scheduleArns] }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        sid: 'PassSchedulerRole',
        actions: ['iam:PassRole'],
        resources: [a.schedulerRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
  }
}

/** Whether a function creates minutes' schedules (the stack acknowledges that wildcard). */
export function createsSchedules(name: FunctionName): boolean {
  return MESSAGES[name].schedules;
}
