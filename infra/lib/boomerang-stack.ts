// Boomerang's AWS stack: the table, the timers (Scheduler group + SQS timer queue), the
// three Lambdas, the HTTP API, the queues for dead letters and system failures, alarms and
// a dashboard. Every function has its own role with only the actions it uses.

import * as path from 'path';
import * as fs from 'fs';
import { ArnFormat, CfnOutput, Duration, Fn, RemovalPolicy, Stack, StackProps, Validations } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subs from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import accessLogFormat from './access-log-format.json';
import tableLayout from './table-layout.json';
import { createsSchedules, grantFunctionAccess } from './access';

/** The longest webhook timeout a task may ask for (the API refuses more). */
export const MAX_WEBHOOK_TIMEOUT_SECONDS = 60;
/** Added to a task's timeout to form its delivery lease (the engine's default). */
export const LEASE_MARGIN_SECONDS = 30;
/** Memory of the API and delivery functions (`boomerang-bench cost` prices with these). */
export const API_MEMORY_MB = 256;
export const DELIVERY_MEMORY_MB = 256;
/** The table's warm throughput, if asked for: whole units a second, at least one. */
function warmThroughput(props: BoomerangStackProps): dynamodb.WarmThroughput | undefined {
  const { tableWarmWrites: writes, tableWarmReads: reads } = props;
  if (writes === undefined && reads === undefined) {
    return undefined;
  }
  for (const units of [writes, reads]) {
    if (units !== undefined && (!Number.isInteger(units) || units < 1)) {
      throw new Error('tableWarmWrites and tableWarmReads must be whole numbers of units, at least 1');
    }
  }
  return { writeUnitsPerSecond: writes, readUnitsPerSecond: reads };
}

/** The namespace the metric filters publish the functions' metric lines to. */
export const METRICS_NAMESPACE = 'Boomerang';

export interface BoomerangStackProps extends StackProps {
  /** Prefix of resource names, e.g. `prod`. */
  readonly stage: string;
  /**
   * Directory with `api/`, `delivery/` and `sweeper/`, each holding the `bootstrap.zip` of
   * `cargo lambda build --release --output-format zip` (its `target/lambda`).
   */
  readonly assetDir: string;
  /** `arm64` (default) or `x86_64`: must match how the zips were built. */
  readonly architecture?: 'arm64' | 'x86_64';
  /** Where alarms are e-mailed; none: alarms only go to the SNS topic. */
  readonly alarmEmail?: string;
  /** Days finished tasks are kept (at least 2). */
  readonly retentionDays?: number;
  /**
   * The table's warm throughput: the writes and reads a second it takes at once, before
   * on-demand scaling has seen the traffic (a new on-demand table starts at 4,000 writes
   * and 12,000 reads). A callback writes three units: 10,000 callbacks a second want about
   * 30,000 writes. Default: none set (the table warms with its traffic).
   */
  readonly tableWarmWrites?: number;
  readonly tableWarmReads?: number;
  /**
   * Reserves (and caps) the delivery function's concurrency, and so the outbound fan-out.
   * Default: none, the function draws on the account's pool, capped by the mapping's
   * maximum concurrency below.
   */
  readonly deliveryReservedConcurrency?: number;
  /**
   * Reserves (and caps) the API function's concurrency. Default: none. Reserve it when
   * other functions in the account could starve it; cap it with the function-URL front
   * door, which has no throttling of its own.
   */
  readonly apiReservedConcurrency?: number;
  /**
   * How many batches of the timer queue the delivery function handles at once (the event
   * source mapping's maximum concurrency, 2 to 1,000). Default: 500, or what the slow
   * lane leaves of the delivery function's reserved concurrency if lower. Half the
   * account's default 1,000 leaves the API and everything else in the account room during
   * a burst; with the slow lane's, above the reserved concurrency batches would be
   * throttled and come back only after the visibility timeout.
   */
  readonly deliveryMaxConcurrency?: number;
  /**
   * How many batches of the slow lane (attempts to destinations whose calls took 3 s or
   * more of late) the delivery function handles at once: 2 to 1,000. Default: 100, or a
   * fifth of the delivery function's reserved concurrency if lower. Slow calls wait only
   * among slow calls, sixteen to a batch; this caps what slow receivers tie up of the
   * function. With `deliveryMaxConcurrency`, at most the reservation.
   */
  readonly slowLaneMaxConcurrency?: number;
  /**
   * Provisioned mode for the timer queue's mapping: at least this many event pollers kept
   * ready (2 to 200; each handles about ten batches at once). Default: none (standard mode,
   * which starts at five batches and adds up to 300 a minute). Pollers are billed by the
   * hour whether busy or not; they buy a burst from idle its full rate at once. Exclusive
   * with `deliveryMaxConcurrency`.
   */
  readonly deliveryMinPollers?: number;
  /** Provisioned mode's ceiling of event pollers (default 200 when provisioned). */
  readonly deliveryMaxPollers?: number;
  /**
   * The HTTP API's steady request rate and burst (default 100 a second, burst 200): a
   * guard for a new deployment, to be raised with the traffic (a batch registration is
   * one request for up to 100 callbacks). The account's own HTTP API quota is 10,000 a
   * second per region.
   */
  readonly apiRateLimit?: number;
  readonly apiBurstLimit?: number;
  /** Private ranges webhooks may reach (comma-separated CIDRs). */
  readonly allowedCidrs?: string;
  /**
   * Runs the delivery function in these subnets of a VPC, with these security groups: for
   * receivers only a private network reaches (give their ranges in `allowedCidrs`). The
   * subnets need a route to DynamoDB, SQS and Scheduler (VPC endpoints, or a NAT
   * gateway) and to the receivers. Default: none (the function has AWS's own network).
   */
  readonly deliverySubnetIds?: string[];
  readonly deliverySecurityGroupIds?: string[];
  /** Where failure alerts go when neither a task nor its tenant names a destination. */
  readonly alertUrl?: string;
  /** Off only for throw-away test stacks. */
  readonly deletionProtection?: boolean;
  /**
   * `http-api` (default): API Gateway's HTTP API in front of the API function, with access
   * logs and throttling. `function-url`: the function's own URL, without API Gateway's
   * $1 per million requests (and without its throttling).
   */
  readonly frontend?: 'http-api' | 'function-url';
}

/** Default maximum concurrency of the timer queue's mapping (see the props). */
export const DEFAULT_DELIVERY_MAX_CONCURRENCY = 500;
/** Default maximum concurrency of the slow lane's mapping (see the props). */
export const DEFAULT_SLOW_LANE_MAX_CONCURRENCY = 100;
/**
 * Attempts in one batch of the slow lane: slow calls share an invocation's wait. No more
 * than a function instance calls one destination at once (16 by default), so that a batch
 * of one receiver's calls runs in one round.
 */
export const SLOW_LANE_BATCH = 16;

/** A mapping's maximum concurrency, as SQS event source mappings take it. */
function concurrency(name: string, value: number): number {
  if (value < 2 || value > 1000) {
    throw new Error(`${name} must be 2 to 1,000`);
  }
  return value;
}

/**
 * The two mappings' scaling. The timer queue's: provisioned pollers when asked for, else a
 * maximum concurrency (the two are exclusive). The slow lane's: a maximum concurrency.
 * Lambda wants the function's reservation, if any, at least the sum of its SQS mappings'
 * maximum concurrencies (else batches are throttled and wait out their visibility
 * timeout): by default the slow lane takes a fifth of it, and the timer queue the rest.
 */
function mappings(props: BoomerangStackProps): {
  timer: {
    maxConcurrency?: number;
    provisionedPollerConfig?: { minimumPollers: number; maximumPollers: number };
  };
  slowMaxConcurrency: number;
} {
  const reserved = props.deliveryReservedConcurrency;
  if (reserved !== undefined && reserved < 4) {
    throw new Error('deliveryReservedConcurrency must be at least 4: two batches of each queue');
  }
  const slowMaxConcurrency = concurrency(
    'slowLaneMaxConcurrency',
    props.slowLaneMaxConcurrency ??
      Math.min(DEFAULT_SLOW_LANE_MAX_CONCURRENCY, reserved === undefined ? Infinity : Math.max(2, Math.floor(reserved / 5))),
  );
  const room = (reserved ?? Infinity) - slowMaxConcurrency;
  const throttled = () =>
    new Error('the mappings\' concurrencies add up to more than deliveryReservedConcurrency: batches would be throttled');
  const provisioned = props.deliveryMinPollers !== undefined || props.deliveryMaxPollers !== undefined;
  if (provisioned) {
    if (props.deliveryMaxConcurrency !== undefined) {
      throw new Error('deliveryMaxConcurrency and provisioned pollers are exclusive: set one');
    }
    const minimumPollers = props.deliveryMinPollers ?? 2;
    const maximumPollers = props.deliveryMaxPollers ?? 200;
    if (minimumPollers < 2 || minimumPollers > 200 || maximumPollers < minimumPollers) {
      throw new Error('deliveryMinPollers must be 2 to 200 and at most deliveryMaxPollers');
    }
    if (room < 0) {
      throw throttled();
    }
    return { timer: { provisionedPollerConfig: { minimumPollers, maximumPollers } }, slowMaxConcurrency };
  }
  if (room < 2) {
    throw throttled();
  }
  const maxConcurrency = concurrency(
    'deliveryMaxConcurrency',
    props.deliveryMaxConcurrency ?? Math.min(DEFAULT_DELIVERY_MAX_CONCURRENCY, room),
  );
  if (maxConcurrency > room) {
    throw throttled();
  }
  return { timer: { maxConcurrency }, slowMaxConcurrency };
}

/** A function's code: the built zip if it is there, else a placeholder (synth and tests). */
function functionCode(assetDir: string, name: string): lambda.Code {
  const zip = path.join(assetDir, name, 'bootstrap.zip');
  if (fs.existsSync(zip)) {
    return lambda.Code.fromAsset(zip);
  }
  process.stderr.write(`note: ${zip} not built; using placeholder code for ${name}\n`);
  return lambda.Code.fromAsset(path.join(__dirname, '..', '..', 'placeholder'));
}

/**
 * A policy resource as cdk-nag's AWS Solutions pack names it in a finding: the resolved
 * value with each reference written `<LogicalId.Attribute>` or `<LogicalId>`.
 */
function nagResourceName(scope: Construct, value: string): string {
  const visit = (node: any): string => {
    if (typeof node === 'string') {
      return node.replace(/\$\{/g, '<').replace(/\}/g, '>');
    }
    if (node['Fn::Join']) {
      const [delimiter, items] = node['Fn::Join'];
      return items.map(visit).join(delimiter);
    }
    if (node['Fn::GetAtt']) {
      const [resource, attribute] = node['Fn::GetAtt'];
      return `<${visit(resource)}.${visit(attribute)}>`;
    }
    if (node.Ref) {
      return `<${visit(node.Ref)}>`;
    }
    return JSON.stringify(node);
  };
  return visit(Stack.of(scope).resolve(value));
}

/**
 * Records, on the construct that holds the statement (a role), why a wildcard resource
 * in its policy is needed: the AWS Solutions pack's IAM5 finding for exactly that
 * resource, and no other, is then acknowledged.
 */
function acknowledgeWildcard(holder: Construct, resource: string, reason: string) {
  Validations.of(holder).acknowledge({
    id: `AwsSolutions-IAM5[Resource::${nagResourceName(holder, resource)}]`,
    reason,
  });
}

export class BoomerangStack extends Stack {
  readonly table: dynamodb.Table;
  /** The HTTP API (absent when the front door is a function URL). */
  readonly api?: apigw.HttpApi;
  readonly functions: Record<'api' | 'delivery' | 'sweeper', lambda.Function>;
  readonly schedulerRole: iam.Role;

  constructor(scope: Construct, id: string, props: BoomerangStackProps) {
    super(scope, id, props);
    const stage = props.stage;
    const retentionDays = props.retentionDays ?? 7;
    if (retentionDays < 2) {
      throw new Error('retentionDays must be at least 2');
    }
    const mapping = mappings(props);
    const protect = props.deletionProtection ?? true;
    const removalPolicy = protect ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const architecture =
      props.architecture === 'x86_64' ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64;

    // ── Storage ────────────────────────────────────────────────────────────────────────
    // The keys, the indexes and the TTL attribute are the store's (`table-layout.json`,
    // which a test of the store checks against its attribute names).
    const attribute = (a: { name: string; type: string }) => ({
      name: a.name,
      type: a.type === 'N' ? dynamodb.AttributeType.NUMBER : dynamodb.AttributeType.STRING,
    });
    this.table = new dynamodb.Table(this, 'Tasks', {
      tableName: `${stage}-boomerang-tasks`,
      partitionKey: attribute(tableLayout.partitionKey),
      sortKey: attribute(tableLayout.sortKey),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: protect,
      timeToLiveAttribute: tableLayout.timeToLive,
      removalPolicy,
      warmThroughput: warmThroughput(props),
    });
    // Tasks are keyed by tenant (`T#<tenant>#<shard>`, task id), so a tenant's tasks are
    // listed from the table itself: no index entry per task. Both indexes project keys
    // only (an entry is written when its key is, never when the task's state changes) and
    // are sparse. `due`, sharded: tasks with pending work that no durable timer holds,
    // read by the sweeper from a checkpoint. `by_key`: tasks registered with a business
    // key, listed and canceled by it.
    for (const index of tableLayout.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: attribute(index.partitionKey),
        sortKey: attribute(index.sortKey),
        projectionType: dynamodb.ProjectionType.KEYS_ONLY,
      });
    }

    // ── Queues ─────────────────────────────────────────────────────────────────────────
    // The queues and the schedule group hold the work's custody (a pending attempt's
    // timer, a minute's fire, a failure to hand back, a dead letter): kept, as the table
    // is, when the stack is deleted, unless deletion protection is off.
    const queue = (id: string, name: string, extra: Partial<sqs.QueueProps> = {}) =>
      new sqs.Queue(this, id, {
        queueName: `${stage}-boomerang-${name}`,
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
        removalPolicy,
        ...extra,
      });
    // Fires Scheduler could not deliver, failed async invocations and timer messages that
    // failed over and over. The sweeper hands each back to the timer queue: an armed
    // task's timer is the only record of its pending attempt.
    const systemFailures = queue('SystemFailures', 'system-failures');
    const deadLetters = queue('DeadLetters', 'dead-letters');
    Validations.of(deadLetters).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is itself the end of the line: the functions send it the tasks that failed for good, for an operator to read. No function receives from it, so nothing fails a message over and over; a queue behind it would only hide a record received and not deleted. The task stays `failed` in the table, and the dead-letters-age alarm fires 2 days before the 14-day retention would drop a message.',
    });

    // ── Functions ──────────────────────────────────────────────────────────────────────
    // The delivery function handles a batch of up to 10 timer messages concurrently, each
    // at most one webhook timeout long; its own timeout stays above that, and at the lease
    // (timeout + margin) so a running delivery is not taken over.
    const deliveryTimeout = Duration.seconds(MAX_WEBHOOK_TIMEOUT_SECONDS + LEASE_MARGIN_SECONDS);
    const timerQueue = queue('TimerQueue', 'timer', {
      // At least the function timeout, as the event source mapping requires. A message
      // comes back this long after a delivery function died with it: its attempt is then
      // taken over (the lease has ended). Twice the timeout rather than AWS's general
      // advice of six, because a message that comes back too early is harmless here: the
      // attempt's lease turns it into a timer for the lease's end.
      visibilityTimeout: Duration.seconds(deliveryTimeout.toSeconds() * 2),
      deadLetterQueue: { queue: systemFailures, maxReceiveCount: 5 },
    });
    // The slow lane: attempts to destinations whose calls took long of late, handed over
    // by the delivery function and read back by it under a mapping of their own, so that a
    // timer queue batch ends when its quick calls do. Made like the timer queue: a message
    // is custody of its attempt.
    const slowQueue = queue('SlowQueue', 'slow', {
      visibilityTimeout: Duration.seconds(deliveryTimeout.toSeconds() * 2),
      deadLetterQueue: { queue: systemFailures, maxReceiveCount: 5 },
    });

    const group = new scheduler.CfnScheduleGroup(this, 'Timers', {
      name: `${stage}-boomerang-timers`,
    });
    group.applyRemovalPolicy(removalPolicy);
    const scheduleArns = Stack.of(this).formatArn({
      service: 'scheduler',
      resource: 'schedule',
      resourceName: `${group.name}/*`,
    });

    const logGroup = (name: string) =>
      new logs.LogGroup(this, `${name}Logs`, {
        logGroupName: `/aws/lambda/${stage}-boomerang-${name.toLowerCase()}`,
        retention: logs.RetentionDays.ONE_MONTH,
        removalPolicy: RemovalPolicy.DESTROY,
      });

    const makeFunction = (
      name: 'Api' | 'Delivery' | 'Sweeper',
      memorySize: number,
      timeout: Duration,
      extra: Partial<lambda.FunctionProps> = {},
    ) => {
      // JSON logs with platform lines (START, END, REPORT) only at WARN: CloudWatch Logs
      // bills by the byte, and those three would be most of the bytes per invocation.
      const group = logGroup(name);
      // Only writing its own logs; no managed policy (they grant logs on `*`).
      const role = new iam.Role(this, `${name}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      });
      const streams = `${group.logGroupArn}:*`;
      role.addToPolicy(
        new iam.PolicyStatement({
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [group.logGroupArn, streams],
        }),
      );
      acknowledgeWildcard(
        role,
        streams,
        'The function\'s own log group\'s streams: Lambda names a stream per execution environment as it starts one, so no stream name is known in advance.',
      );
      return new lambda.Function(this, name, {
        functionName: `${stage}-boomerang-${name.toLowerCase()}`,
        runtime: lambda.Runtime.PROVIDED_AL2023,
        architecture,
        handler: 'bootstrap',
        code: functionCode(props.assetDir, name.toLowerCase()),
        memorySize,
        timeout,
        role,
        logGroup: group,
        loggingFormat: lambda.LoggingFormat.JSON,
        systemLogLevelV2: lambda.SystemLogLevel.WARN,
        applicationLogLevelV2: lambda.ApplicationLogLevel.INFO,
        ...extra,
      });
    };

    // Sized by `boomerang-bench cost` (which prices with these sizes). Both mostly wait: on
    // DynamoDB and SQS, and the delivery function on the webhooks of its batch. Lambda
    // bills memory × time, so work on the CPU (TLS handshakes, say) costs the same at any
    // size while waiting costs in proportion: 256 MB is the cheaper size, and a receiver
    // that takes a second costs half what it would at 512 MB. The API answers well inside
    // API Gateway's 30 s.
    // Built from the literal name, so functions (the delivery function included) can be
    // told this ARN without a reference cycle.
    const deliveryArn = Stack.of(this).formatArn({
      service: 'lambda',
      resource: 'function',
      resourceName: `${stage}-boomerang-delivery`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const apiFn = makeFunction('Api', API_MEMORY_MB, Duration.seconds(29), {
      reservedConcurrentExecutions: props.apiReservedConcurrency,
    });
    const deliveryFn = makeFunction('Delivery', DELIVERY_MEMORY_MB, deliveryTimeout, {
      reservedConcurrentExecutions: props.deliveryReservedConcurrency,
    });
    // One sweep at a time: overlapping sweeps would only re-arm the same tasks twice.
    const sweeperFn = makeFunction('Sweeper', 256, Duration.seconds(60), {
      reservedConcurrentExecutions: 1,
    });
    this.functions = { api: apiFn, delivery: deliveryFn, sweeper: sweeperFn };
    this.metricFilters({ api: apiFn, delivery: deliveryFn, sweeper: sweeperFn });

    // A minute's schedule sends its fire to the timer queue, as bucket work: custody goes
    // from Scheduler straight into the queue, which redelivers a fire that fails (and after
    // five receives hands it to system failures), with no asynchronous invocation between
    // them to drop it. What Scheduler cannot send goes to system failures. Schedules made
    // by earlier releases invoke the delivery function, and may until they fire.
    this.schedulerRole = new iam.Role(this, 'SchedulerRole', {
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    });
    this.schedulerRole.addToPolicy(
      new iam.PolicyStatement({
        actions: ['sqs:SendMessage'],
        resources: [timerQueue.queueArn, systemFailures.queueArn],
      }),
    );
    this.schedulerRole.addToPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: [deliveryArn],
      }),
    );

    const env: Record<string, string> = {
      BOOMERANG_TABLE: this.table.tableName,
      BOOMERANG_TIMER_QUEUE_URL: timerQueue.queueUrl,
      BOOMERANG_DEAD_LETTER_QUEUE_URL: deadLetters.queueUrl,
      BOOMERANG_SCHEDULE_GROUP: group.ref,
      // What minutes' schedules target (the variable's name is older than the choice).
      BOOMERANG_DELIVERY_FUNCTION_ARN: timerQueue.queueArn,
      BOOMERANG_SCHEDULER_ROLE_ARN: this.schedulerRole.roleArn,
      BOOMERANG_SCHEDULER_DLQ_ARN: systemFailures.queueArn,
      BOOMERANG_SYSTEM_FAILURES_QUEUE_URL: systemFailures.queueUrl,
      BOOMERANG_RETENTION_DAYS: String(retentionDays),
      BOOMERANG_ALLOWED_CIDRS: props.allowedCidrs ?? '',
      BOOMERANG_ALERT_URL: props.alertUrl ?? '',
    };
    for (const fn of [apiFn, deliveryFn, sweeperFn]) {
      for (const [k, v] of Object.entries(env)) {
        fn.addEnvironment(k, v);
      }
    }
    // Only the delivery function calls webhooks, so only it hands attempts to the slow lane.
    deliveryFn.addEnvironment('BOOMERANG_SLOW_QUEUE_URL', slowQueue.queueUrl);
    // What each function may do to the table, the queues and the schedule group.
    grantFunctionAccess({
      functions: { api: apiFn, delivery: deliveryFn, sweeper: sweeperFn },
      table: this.table,
      queues: { timer: timerQueue, slow: slowQueue, deadLetters, systemFailures },
      scheduleArns,
      schedulerRole: this.schedulerRole,
    });
    // The one wildcard resource in those grants, needed:
    for (const [name, fn] of [['api', apiFn], ['delivery', deliveryFn], ['sweeper', sweeperFn]] as const) {
      if (createsSchedules(name)) {
        acknowledgeWildcard(
          fn.role!,
          scheduleArns,
          'Schedules in this stack\'s own group only: the functions create one schedule per minute of due time, named by that minute (`bucket-<yyyymmddThhmm>`), so the names are not known in advance.',
        );
      }
    }
    this.deliveryInVpc(deliveryFn, props);

    // Schedules of earlier releases invoke asynchronously: no Lambda retries (Scheduler
    // has its own), and a failure goes to the system-failures queue.
    // The destination and the two mappings below are made without CDK's grants, which add
    // actions Lambda does not use (GetQueueUrl, ChangeMessageVisibility): the function's
    // role has exactly what they need from `access.ts`.
    deliveryFn.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.hours(1),
      onFailure: { bind: () => ({ destination: systemFailures.queueArn }) },
    });
    new lambda.EventSourceMapping(this, 'TimerQueueMapping', {
      target: deliveryFn,
      eventSourceArn: timerQueue.queueArn,
      batchSize: 10,
      reportBatchItemFailures: true,
      ...mapping.timer,
    });
    // Sixteen slow calls to a batch, gathered for up to a second (a batch over ten needs a
    // batching window): with 1 % of calls taking a 10-second timeout, 10,000 callbacks a
    // second keep about 63 slow batches running, where mixed into the timer queue's
    // batches they would keep about 1,000.
    new lambda.EventSourceMapping(this, 'SlowQueueMapping', {
      target: deliveryFn,
      eventSourceArn: slowQueue.queueArn,
      batchSize: SLOW_LANE_BATCH,
      maxBatchingWindow: Duration.seconds(1),
      reportBatchItemFailures: true,
      maxConcurrency: mapping.slowMaxConcurrency,
    });

    new events.Rule(this, 'SweepEveryMinute', {
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [new targets.LambdaFunction(sweeperFn, { retryAttempts: 0 })],
    });

    // ── HTTP front door ────────────────────────────────────────────────────────────────
    let apiUrl: string;
    if (props.frontend === 'function-url') {
      // No API Gateway ($1 per million requests saved): the API function authenticates
      // every request itself (bearer API keys), so the URL needs no IAM auth. There is no
      // API Gateway throttling either: cap the function's concurrency instead.
      const url = apiFn.addFunctionUrl({ authType: lambda.FunctionUrlAuthType.NONE });
      apiUrl = url.url;
    } else {
      this.api = this.httpApi(stage, apiFn, props);
      apiUrl = this.api.apiEndpoint;
    }

    // ── Alarms and dashboard ───────────────────────────────────────────────────────────
    // Every alarm is named `<stage>-boomerang-<id>`: the topic and its key admit CloudWatch
    // on behalf of those alarms only, in this account and region.
    const alarmPrefix = `${stage}-boomerang-`;
    const alarmArns = Stack.of(this).formatArn({
      service: 'cloudwatch',
      resource: 'alarm',
      resourceName: `${alarmPrefix}*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    const fromTheseAlarms = {
      StringEquals: { 'aws:SourceAccount': Stack.of(this).account },
      ArnLike: { 'aws:SourceArn': alarmArns },
    };
    // The topic's own key: CloudWatch publishes an alarm to an encrypted topic only with
    // leave to use its key, and the AWS-managed SNS key (`alias/aws/sns`) has a policy no
    // one can change. ($1 a month.)
    const alarmKey = new kms.Key(this, 'AlarmTopicKey', {
      description: `${stage} Boomerang alarm topic`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    alarmKey.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: fromTheseAlarms,
      }),
    );
    const topic = new sns.Topic(this, 'Alarms', {
      topicName: `${stage}-boomerang-alarms`,
      masterKey: alarmKey,
      enforceSSL: true,
    });
    // `enforceSSL` gives the topic a policy of its own (the TLS deny), and a topic policy
    // replaces SNS's default one: without this statement CloudWatch could not publish, and
    // every alarm would fire into nothing.
    topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'AlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: fromTheseAlarms,
      }),
    );
    if (props.alarmEmail) {
      topic.addSubscription(new subs.EmailSubscription(props.alarmEmail));
    }
    // Over `threshold` (0 unless said) for `periods` periods in a row (1 unless said).
    const alarm = (
      id: string,
      metric: cloudwatch.IMetric,
      description: string,
      options: Partial<cloudwatch.CreateAlarmOptions> = {},
    ) => {
      const a = new cloudwatch.Alarm(this, id, {
        alarmName: `${alarmPrefix}${id}`,
        alarmDescription: description,
        metric,
        threshold: 0,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        ...options,
      });
      a.addAlarmAction(new cwActions.SnsAction(topic));
      return a;
    };
    const period = Duration.minutes(5);
    alarm(
      'dead-letters',
      deadLetters.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      'Tasks failed for good and wait for manual handling (retry with POST /v1/tasks/{id}/retry).',
    );
    alarm(
      'system-failures',
      systemFailures.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      'Timer fires or invocations failed; the sweeper hands them back, but find out why.',
    );
    alarm(
      'delivery-errors',
      deliveryFn.metricErrors({ period, statistic: 'Sum' }),
      'The delivery function failed (not a webhook failure: those are retried tasks).',
    );
    const custom = (metricName: string, statistic: string) =>
      new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName, period, statistic });
    // The sweep passes' counts, from both the sweeper's log group and the delivery
    // function's (its half-minute pass): see `metricFilters`.
    alarm(
      'sweeper-repairs',
      custom('SweepRepaired', 'Sum'),
      'A sweep pass (the sweeper, or the delivery function\'s half-minute pass) found lost timers or stalled deliveries and re-armed them, late. Now and then is the repair working; if it goes on, find what loses timers: the system-failures, scheduler and throttle alarms, and the functions\' errors.',
    );
    alarm(
      'bucket-check-failed',
      custom('BucketCheckFailed', 'Sum'),
      'A sweep pass could not check whether past minutes\' bucket fires came (a table or queue call failed); the check resumes from the same minute on the next pass. If it goes on, read the `bucket_check_failed` lines and the errors beside them in the sweeper\'s and delivery function\'s logs: until a check gets past it, a minute whose fire never came is not read, and its callbacks wait.',
    );
    alarm(
      'redrive-failed',
      custom('RedriveFailed', 'Sum'),
      'A sweep pass could not hand failed timers back from the system-failures queue to the timer queue; they stay queued and the next pass tries again. If it goes on, read the `redrive_failed` lines and the errors beside them in the sweeper\'s and delivery function\'s logs (SQS errors or throttles); the system-failures-age alarm fires 2 days before the queue would drop them.',
    );
    alarm(
      'items-set-aside',
      custom('ItemsSetAside', 'Sum'),
      'A sweep pass or a minute\'s bucket fire met table items it could not read and passed over them, so that they no longer block the rest. The functions\' logs name each item\'s key in an error line beside the `set_aside` line: inspect the item in the table and repair or remove it; its task is neither swept nor fired until then.',
    );
    // Scheduler invokes the delivery function asynchronously, with no Lambda retries and
    // the system-failures queue as the on-failure destination.
    const deliveryAsync = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Lambda',
        metricName,
        dimensionsMap: { FunctionName: deliveryFn.functionName },
        period,
        statistic: 'Sum',
      });
    alarm(
      'delivery-destination-failures',
      deliveryAsync('DestinationDeliveryFailures'),
      'Lambda could not send a failed bucket fire to its on-failure destination, the system-failures queue (permissions, the queue missing or unavailable): that fire is lost, and nothing but the sweep\'s check of minutes brings it back. Fix the queue or the function\'s destination, then run `boomerang aws rearm`.',
    );
    alarm(
      'delivery-async-dropped',
      deliveryAsync('AsyncEventsDropped'),
      'Lambda dropped a bucket fire without running the delivery function to the end (it failed, or the event aged out or was throttled past its hour): each one goes to the system-failures queue, which the sweep hands back. Find why in the delivery function\'s errors and throttles; if delivery-destination-failures fires too, fires were lost: run `boomerang aws rearm`.',
    );
    this.custodyAlarms(alarm, period, { timerQueue, slowQueue, systemFailures, deadLetters, group });
    this.capacityAlarms(alarm, period, { api: apiFn, delivery: deliveryFn, sweeper: sweeperFn });
    if (this.api) {
      alarm(
        'api-5xx',
        this.api.metricServerError({ period, statistic: 'Sum' }),
        'The API answered 5xx (a store or queue it could not reach) for 15 minutes: clients are retrying.',
        { evaluationPeriods: 3 },
      );
    }

    const dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `${stage}-boomerang`,
    });
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Tasks',
        left: ['Registered', 'Delivered', 'Retried', 'Failed'].map((m) => custom(m, 'Sum')),
        width: 12,
      }),
      new cloudwatch.GraphWidget({
        title: 'Attempt lateness (ms)',
        left: [custom('AttemptLateness', 'p50'), custom('AttemptLateness', 'p99')],
        width: 12,
      }),
    );

    // ── Outputs ────────────────────────────────────────────────────────────────────────
    new CfnOutput(this, 'ApiUrl', { value: apiUrl });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'TimerQueueUrl', { value: timerQueue.queueUrl });
    new CfnOutput(this, 'SlowQueueUrl', { value: slowQueue.queueUrl });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: deadLetters.queueUrl });
    new CfnOutput(this, 'SystemFailuresQueueUrl', { value: systemFailures.queueUrl });
    new CfnOutput(this, 'ScheduleGroup', { value: Fn.ref(group.logicalId) });
  }

  /**
   * Puts the delivery function in the VPC subnets the props name, if any, with the
   * security groups they name, and lets Lambda manage its network interfaces there: the
   * interfaces, subnets and groups named, and the two describe calls, which take no
   * resource but `*`.
   */
  private deliveryInVpc(fn: lambda.Function, props: BoomerangStackProps) {
    const subnets = props.deliverySubnetIds ?? [];
    const groups = props.deliverySecurityGroupIds ?? [];
    if (subnets.length === 0 && groups.length === 0) {
      return;
    }
    if (subnets.length === 0 || groups.length === 0) {
      throw new Error('deliverySubnetIds and deliverySecurityGroupIds go together');
    }
    (fn.node.defaultChild as lambda.CfnFunction).vpcConfig = {
      subnetIds: subnets,
      securityGroupIds: groups,
    };
    const ec2Arn = (resource: string, name: string) =>
      Stack.of(this).formatArn({ service: 'ec2', resource, resourceName: name });
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['ec2:CreateNetworkInterface'],
        resources: [
          ec2Arn('network-interface', '*'),
          ...subnets.map((id) => ec2Arn('subnet', id)),
          ...groups.map((id) => ec2Arn('security-group', id)),
        ],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: [
          'ec2:DeleteNetworkInterface',
          'ec2:AssignPrivateIpAddresses',
          'ec2:UnassignPrivateIpAddresses',
        ],
        resources: [ec2Arn('network-interface', '*')],
      }),
    );
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets'],
        resources: ['*'],
      }),
    );
    acknowledgeWildcard(
      fn.role!,
      ec2Arn('network-interface', '*'),
      'The network interfaces Lambda creates for the function in the subnets named: their ids are assigned when they are created. Creating one is also held to the subnets and security groups named.',
    );
    acknowledgeWildcard(
      fn.role!,
      '*',
      'ec2:DescribeNetworkInterfaces and ec2:DescribeSubnets only, which take no resource-level permissions: EC2 authorizes them on `*` alone. They read, and change nothing.',
    );
  }

  /**
   * Alarms on what holds the work: the timer queue and the slow lane falling behind, the sweeper not running,
   * bucket fires Scheduler dropped or could not deliver, and messages that would outlive
   * their queue's 14 days.
   */
  private custodyAlarms(
    alarm: (id: string, m: cloudwatch.IMetric, d: string, o?: Partial<cloudwatch.CreateAlarmOptions>) => cloudwatch.Alarm,
    period: Duration,
    q: {
      timerQueue: sqs.Queue;
      slowQueue: sqs.Queue;
      systemFailures: sqs.Queue;
      deadLetters: sqs.Queue;
      group: scheduler.CfnScheduleGroup;
    },
  ) {
    const max = { period, statistic: 'Maximum' };
    // A wait on the queue is at most 14 minutes (and 15 s of rounding): a message older
    // than 20 is not being taken.
    alarm(
      'timer-queue-age',
      q.timerQueue.metricApproximateAgeOfOldestMessage(max),
      'A timer message has waited over 20 minutes: deliveries are not taking the timer queue (function throttled or failing).',
      { threshold: 20 * 60 },
    );
    // A slow-lane message is due when handed over: one waiting five minutes is behind.
    alarm(
      'slow-lane-age',
      q.slowQueue.metricApproximateAgeOfOldestMessage(max),
      'An attempt has waited 5 minutes in the slow lane: slow receivers outrun its concurrency (slowLaneMaxConcurrency), or the function is throttled.',
      { threshold: 5 * 60 },
    );
    // Two days before the queue's 14-day retention would drop the message.
    const twelveDays = 12 * 24 * 3600;
    alarm(
      'system-failures-age',
      q.systemFailures.metricApproximateAgeOfOldestMessage(max),
      'A system failure is 12 days old and the sweeper has not handed it back: 2 days before it expires, run `boomerang aws rearm`.',
      { threshold: twelveDays },
    );
    alarm(
      'dead-letters-age',
      q.deadLetters.metricApproximateAgeOfOldestMessage(max),
      'A dead letter is 12 days old: read it before the queue drops it in 2 days (the task stays `failed` in the table).',
      { threshold: twelveDays },
    );
    const sweeperInvocations = new cloudwatch.Metric({
      namespace: 'AWS/Lambda',
      metricName: 'Invocations',
      dimensionsMap: { FunctionName: this.functions.sweeper.functionName },
      period,
      statistic: 'Sum',
    });
    alarm(
      'sweeper-heartbeat',
      sweeperInvocations,
      'The sweeper has not run for 10 minutes (it runs every minute): lost timers are not being repaired.',
      {
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 2,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      },
    );
    alarm(
      'sweeper-errors',
      this.functions.sweeper.metricErrors({ period, statistic: 'Sum' }),
      'The sweeper failed: lost timers and system failures wait for its next run.',
    );
    const scheduler = (metricName: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/Scheduler',
        metricName,
        dimensionsMap: { ScheduleGroup: q.group.name! },
        period,
        statistic: 'Sum',
      });
    alarm(
      'scheduler-target-errors',
      scheduler('TargetErrorCount'),
      'Scheduler could not invoke the delivery function for a minute\'s bucket; it retries, then sends the fire to system failures.',
    );
    alarm(
      'scheduler-dropped',
      scheduler('InvocationDroppedCount'),
      'Scheduler dropped a bucket fire: run `boomerang aws rearm` to arm that minute\'s tasks again.',
    );
  }

  /**
   * Alarms on capacity: throttled functions and table, and attempts running late.
   */
  private capacityAlarms(
    alarm: (id: string, m: cloudwatch.IMetric, d: string, o?: Partial<cloudwatch.CreateAlarmOptions>) => cloudwatch.Alarm,
    period: Duration,
    fns: Record<'api' | 'delivery' | 'sweeper', lambda.Function>,
  ) {
    for (const [name, fn] of Object.entries(fns)) {
      alarm(
        `${name}-throttles`,
        fn.metricThrottles({ period, statistic: 'Sum' }),
        `The ${name} function was throttled: raise its reserved concurrency or the account's limit.`,
      );
    }
    // The SDK retries a throttled request (five tries), so a throttle is an alarm only when
    // it goes on: three periods in a row.
    const dynamo = (metricName: string, index?: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: {
          TableName: this.table.tableName,
          ...(index ? { GlobalSecondaryIndexName: index } : {}),
        },
        period,
        statistic: 'Sum',
      });
    const sustained = { evaluationPeriods: 3 };
    alarm('table-read-throttles', dynamo('ReadThrottleEvents'), 'Table reads throttled for 15 minutes.', sustained);
    alarm('table-write-throttles', dynamo('WriteThrottleEvents'), 'Table writes throttled for 15 minutes: registrations are being refused.', sustained);
    for (const index of tableLayout.indexes) {
      alarm(
        `${index.name.replace('_', '-')}-index-write-throttles`,
        dynamo('WriteThrottleEvents', index.name),
        `The ${index.name} index throttled for 15 minutes; a throttled index throttles the table's writes.`,
        sustained,
      );
    }
    alarm(
      'lateness-p99',
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: 'AttemptLateness',
        period,
        statistic: 'p99',
      }),
      'The slowest 1 % of attempts started over a minute late for 15 minutes: delivery cannot keep up.',
      { threshold: 60_000, evaluationPeriods: 3 },
    );
  }

  /**
   * The `Boomerang` metrics, from the compact JSON lines the functions print (see
   * `shared/aws/src/metric_lines.rs`). Metric filters cost nothing; the lines carry no metric
   * directive, so they are half the bytes an Embedded Metric Format document would be.
   * The sweep's lines are printed by the sweeper and by the delivery function (which runs a
   * sweep pass every half minute), so each of those metrics is read from both log groups
   * into one metric: its alarm sums the two.
   */
  private metricFilters(fns: Record<'api' | 'delivery' | 'sweeper', lambda.Function>) {
    const P = logs.FilterPattern;
    const count = cloudwatch.Unit.COUNT;
    const filters: [keyof typeof fns, string, logs.IFilterPattern, string, cloudwatch.Unit][] = [
      ['api', 'Registered', P.numberValue('$.registered', '>', 0), '$.registered', count],
      ['delivery', 'Delivered', P.stringValue('$.outcome', '=', 'succeeded'), '1', count],
      ['delivery', 'Retried', P.stringValue('$.outcome', '=', 'retrying'), '1', count],
      ['delivery', 'Failed', P.stringValue('$.outcome', '=', 'failed'), '1', count],
      [
        'delivery',
        'AttemptLateness',
        P.numberValue('$.lateness_ms', '>=', 0),
        '$.lateness_ms',
        cloudwatch.Unit.MILLISECONDS,
      ],
    ];
    const sweepLines: [string, string][] = [
      ['SweepRepaired', 'sweep_repaired'],
      ['BucketCheckFailed', 'bucket_check_failed'],
      ['RedriveFailed', 'redrive_failed'],
      ['ItemsSetAside', 'set_aside'],
    ];
    for (const [metricName, field] of sweepLines) {
      for (const fn of ['sweeper', 'delivery'] as const) {
        filters.push([fn, metricName, P.numberValue(`$.${field}`, '>', 0), `$.${field}`, count]);
      }
    }
    const seen = new Set<string>();
    for (const [fn, metricName, filterPattern, metricValue, unit] of filters) {
      // The first filter of a metric keeps the id it has always had (the sweeper's
      // `SweepRepairedMetric`); a metric's second log group names its function.
      const id = seen.has(metricName)
        ? `${metricName}${fn[0].toUpperCase()}${fn.slice(1)}Metric`
        : `${metricName}Metric`;
      seen.add(metricName);
      new logs.MetricFilter(this, id, {
        logGroup: fns[fn].logGroup,
        metricNamespace: METRICS_NAMESPACE,
        metricName,
        filterPattern,
        metricValue,
        unit,
      });
    }
  }

  /**
   * The HTTP API: `/v1/*`, `/healthz`, `/openapi.json` and the console (`/console`,
   * `/console/*`) to the API function, logged and throttled.
   */
  private httpApi(stage: string, apiFn: lambda.Function, props: BoomerangStackProps): apigw.HttpApi {
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
      logGroupName: `/aws/apigateway/${stage}-boomerang`,
      retention: logs.RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const api = new apigw.HttpApi(this, 'HttpApi', {
      apiName: `${stage}-boomerang`,
      createDefaultStage: true,
    });
    const integration = new HttpLambdaIntegration('ApiIntegration', apiFn);
    api.addRoutes({ path: '/v1/{proxy+}', methods: [apigw.HttpMethod.ANY], integration });
    api.addRoutes({ path: '/healthz', methods: [apigw.HttpMethod.GET], integration });
    api.addRoutes({ path: '/openapi.json', methods: [apigw.HttpMethod.GET], integration });
    api.addRoutes({ path: '/console', methods: [apigw.HttpMethod.GET], integration });
    api.addRoutes({ path: '/console/{file}', methods: [apigw.HttpMethod.GET], integration });
    // Read by cdk-nag's AWS Solutions pack (APIG4) for each route.
    Validations.of(api).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'The API function authenticates every request itself: each /v1 call needs a bearer API key, which it maps to a tenant (and refuses with 401 otherwise). /healthz, /openapi.json and the console\'s static files are public by design and carry no data (the console asks for a key and sends it with each /v1 call). A gateway authorizer would only repeat the key lookup, at a cost per request.',
    });
    const stageResource = api.defaultStage!.node.defaultChild as apigw.CfnStage;
    // One JSON line per request, in the format `boomerang-bench cost` prices too. Each log
    // event has its own timestamp, so the line carries no time of its own.
    stageResource.accessLogSettings = {
      destinationArn: accessLogs.logGroupArn,
      format: JSON.stringify(accessLogFormat),
    };
    const rate = props.apiRateLimit ?? 100;
    const burst = props.apiBurstLimit ?? Math.max(200, rate);
    if (rate < 1 || burst < 1) {
      throw new Error('apiRateLimit and apiBurstLimit must be at least 1');
    }
    stageResource.defaultRouteSettings = {
      throttlingRateLimit: rate,
      throttlingBurstLimit: burst,
    };
    return api;
  }
}
