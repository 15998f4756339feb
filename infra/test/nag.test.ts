// cdk-nag's AWS Solutions rule pack over the app, built as `cdk synth -c stage=ci` builds
// it (bin/boomerang.ts, with cdk.json's context), and over the variants that add
// resources. Every finding must be fixed, or acknowledged in the stack with its reason:
// no error and no warning may be left.

import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { defineApp } from '../bin/boomerang';

const noZips = path.join(os.tmpdir(), 'boomerang-no-zips');
// dist/test → infra/cdk.json
const cdkJson = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8'));

/**
 * The findings cdk-nag reports for the app that `context` describes, one line each
 * (severity, rule, construct path), and the acknowledgments the stack carries.
 */
function findings(context: Record<string, string>): { lines: string[]; acknowledged: string[] } {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'boomerang-nag-'));
  try {
    const app = new App({
      outdir,
      context: { ...cdkJson.context, stage: 'ci', deletionProtection: 'false', assetDir: noZips, ...context },
    });
    const stack = defineApp(app);
    // The app's own plugin fails the synthesis on any finding, as `cdk synth` does; the
    // report is then read for a readable failure.
    let synthError: unknown;
    try {
      app.synth();
    } catch (e) {
      synthError = e;
    }
    const report = new AwsSolutionsChecks(app, { verbose: true }).validateScope(app);
    const lines = report.violations.flatMap((v) =>
      v.violatingResources.map(
        (r: any) => `${v.severity ?? 'error'} ${v.ruleName} at ${r.constructPath ?? r.resourceLogicalId}`,
      ),
    );
    if (synthError !== undefined && lines.length === 0) {
      throw synthError;
    }
    const acknowledged = stack.node
      .findAll()
      .flatMap((c) => c.node.metadata)
      .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((m) => Object.entries<string>(m.data).map(([id, reason]) => `${id}: ${reason}`));
    return { lines, acknowledged };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

function assertClean(context: Record<string, string>) {
  const { lines } = findings(context);
  assert.deepEqual(lines, [], `cdk-nag AwsSolutions findings (${JSON.stringify(context)}):\n${lines.join('\n')}`);
}

test('cdk-nag AwsSolutions: no error or warning on the stack `cdk synth -c stage=ci` builds', () => {
  assertClean({});
});

test('cdk-nag AwsSolutions: none on the variants that add resources (function URL, alarm e-mail, delivery in a VPC)', () => {
  assertClean({ frontend: 'function-url' });
  assertClean({ alarmEmail: 'ops@example.com' });
  assertClean({
    deliverySubnetIds: 'subnet-0123456789abcdef0,subnet-0fedcba9876543210',
    deliverySecurityGroupIds: 'sg-0123456789abcdef0',
  });
});

test('every acknowledged finding carries its reason, and each is one the pack would report', () => {
  const { acknowledged } = findings({});
  assert.ok(acknowledged.length > 0);
  for (const line of acknowledged) {
    const [, reason] = line.split(/: (.*)/s);
    assert.ok(reason && reason.length >= 40, `a reason, not a placeholder: ${line}`);
  }
  // Wildcard resources are acknowledged one by one (`AwsSolutions-IAM5[Resource::…]`),
  // never the rule as a whole.
  const ids = acknowledged.map((l) => l.split(': ')[0].replace(/^annotation::/i, ''));
  assert.ok(!ids.includes('AwsSolutions-IAM5'), 'IAM5 is never acknowledged wholesale');
  assert.deepEqual(
    [...new Set(ids.map((id) => id.replace(/\[.*/, '')))].sort(),
    ['AwsSolutions-APIG4', 'AwsSolutions-IAM5', 'AwsSolutions-SQS3'],
  );
  // Each acknowledgment is needed: without the stack's acknowledgments the pack reports
  // the same findings. (An acknowledgment for a finding that no longer occurs would hide
  // nothing, but would tell a reader of something that is not there.)
  const app = new App({
    context: { ...cdkJson.context, stage: 'ci', deletionProtection: 'false', assetDir: noZips },
  });
  defineApp(app);
  const blind = new AwsSolutionsChecks(app);
  (blind as any).isAcknowledged = () => false;
  const raw = blind.validateScope(app).violations.map((v) => v.ruleName);
  for (const id of new Set(ids)) {
    assert.ok(raw.includes(id), `${id} is acknowledged but not reported`);
  }
});
