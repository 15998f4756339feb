// What each function's role may do: the table's items by their leading keys, the queues,
// the schedule group and the Scheduler role to pass. Kept apart from the stack so that the
// grants can be read, and checked against the calls the functions make, in one place.

import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';

export interface FunctionAccess {
  readonly functions: Record<'api' | 'delivery' | 'sweeper', lambda.Function>;
  readonly table: dynamodb.Table;
  readonly queues: Record<'timer' | 'slow' | 'deadLetters' | 'systemFailures', sqs.Queue>;
  /** The ARNs of the schedules in the group (`…:schedule/<group>/*`). */
  readonly scheduleArns: string;
  /** The role Scheduler invokes with, which the functions pass to it. */
  readonly schedulerRole: iam.Role;
}

export function grantFunctionAccess(a: FunctionAccess): void {
  const { table, queues, scheduleArns, schedulerRole } = a;
  const { api: apiFn, delivery: deliveryFn, sweeper: sweeperFn } = a.functions;
  // Every function registers, retries or re-arms, so each may write tasks and arm timers.
  for (const fn of [apiFn, deliveryFn, sweeperFn]) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [
          'dynamodb:GetItem',
          'dynamodb:BatchGetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:Query',
        ],
        resources: [table.tableArn, `${table.tableArn}/index/*`],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [queues.timer.queueArn],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['scheduler:CreateSchedule'],
        resources: [scheduleArns],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [schedulerRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'scheduler.amazonaws.com' } },
      }),
    );
  }
  // No function writes an API key (`K#<sha-256 hex>`) or a tenant (`N#<tenant>`, which
  // holds its signing secret): operators mint and change them (`boomerang keys create`,
  // `boomerang tenants …`) with their own credentials. A replace key's item also begins
  // `K#`, but as `K#<tenant>#<key>`: the second `#` tells the two apart.
  for (const fn of [apiFn, deliveryFn, sweeperFn]) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        effect: iam.Effect.DENY,
        actions: [
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:BatchWriteItem',
        ],
        resources: [table.tableArn],
        conditions: {
          'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': ['N#*', `K#${'?'.repeat(64)}`] },
          'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': ['K#*#*'] },
        },
      }),
    );
  }
  // The API removes a tenant's named retry policies and task templates (`P#<tenant>` and
  // `TM#<tenant>` items), and nothing else: tasks are never deleted by a function (their
  // TTL does it).
  apiFn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['dynamodb:DeleteItem'],
      resources: [table.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['P#*', 'TM#*'] } },
    }),
  );
  // Only the delivery function calls webhooks, so only it hands attempts to the slow lane.
  deliveryFn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['sqs:SendMessage'],
      resources: [queues.slow.queueArn],
    }),
  );
  // Exhausted tasks are dead-lettered by whoever ran the last attempt, or by the sweeper.
  for (const fn of [deliveryFn, sweeperFn]) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [queues.deadLetters.queueArn],
      }),
    );
  }
  // The API also retries failed tasks; it never sends dead letters itself.
  // The sweeper hands failed timers back from the system-failures queue.
  sweeperFn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage'],
      resources: [queues.systemFailures.queueArn],
    }),
  );
}
