#!/usr/bin/env node
// The CDK app. Settings come from context: `cdk deploy -c stage=prod -c alarmEmail=…`.

import * as path from 'path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BoomerangStack, BoomerangStackProps } from '../lib/boomerang-stack';

/** The stack's props, from the app's context. */
export function propsFromContext(app: App): BoomerangStackProps {
  const ctx = (key: string): string | undefined => {
    const v = app.node.tryGetContext(key);
    return v === undefined || v === '' ? undefined : String(v);
  };
  const num = (key: string): number | undefined => {
    const v = ctx(key);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) {
      throw new Error(`context ${key} must be a whole number, not ${v}`);
    }
    return n;
  };
  const stage = ctx('stage') ?? 'dev';
  const architecture = ctx('architecture') ?? 'arm64';
  if (architecture !== 'arm64' && architecture !== 'x86_64') {
    throw new Error('context architecture must be arm64 or x86_64');
  }
  const frontend = ctx('frontend') ?? 'http-api';
  if (frontend !== 'http-api' && frontend !== 'function-url') {
    throw new Error('context frontend must be http-api or function-url');
  }
  return {
    stage,
    // The output directory of `cargo lambda build --release --output-format zip`.
    assetDir: path.resolve(ctx('assetDir') ?? path.join(__dirname, '..', '..', '..', 'target', 'lambda')),
    architecture,
    frontend,
    alarmEmail: ctx('alarmEmail'),
    retentionDays: num('retentionDays'),
    tableWarmWrites: num('tableWarmWrites'),
    tableWarmReads: num('tableWarmReads'),
    deliveryReservedConcurrency: num('deliveryReservedConcurrency'),
    apiReservedConcurrency: num('apiReservedConcurrency'),
    deliveryMaxConcurrency: num('deliveryMaxConcurrency'),
    slowLaneMaxConcurrency: num('slowLaneMaxConcurrency'),
    deliveryMinPollers: num('deliveryMinPollers'),
    deliveryMaxPollers: num('deliveryMaxPollers'),
    apiRateLimit: num('apiRateLimit'),
    apiBurstLimit: num('apiBurstLimit'),
    allowedCidrs: ctx('allowedCidrs'),
    deliverySubnetIds: ctx('deliverySubnetIds')?.split(',').map((s) => s.trim()),
    deliverySecurityGroupIds: ctx('deliverySecurityGroupIds')?.split(',').map((s) => s.trim()),
    alertUrl: ctx('alertUrl'),
    deletionProtection: ctx('deletionProtection') !== 'false',
    env: {
      account: process.env.CDK_DEFAULT_ACCOUNT,
      region: process.env.CDK_DEFAULT_REGION,
    },
  };
}

/**
 * The app's stack, and cdk-nag's AWS Solutions rule pack over it: a synthesis with a
 * finding that is neither fixed nor acknowledged in the stack (with its reason) fails.
 */
export function defineApp(app: App): BoomerangStack {
  const props = propsFromContext(app);
  const stack = new BoomerangStack(app, `Boomerang-${props.stage}`, props);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return stack;
}

// Run by the CDK CLI (`cdk.json`), which synthesizes the app when it ends; imported by
// the tests, which build apps of their own.
if (require.main === module) {
  defineApp(new App());
}
