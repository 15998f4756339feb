#!/usr/bin/env bash
# Offline checks of the CDK stack in infra/: npm ci (pinned), assertion tests on the
# synthesized template (among them cdk-nag's AWS Solutions pack over the app and its
# variants), `cdk synth` (the real zips when built, else placeholders; the app runs the
# same pack, and a finding the stack neither fixes nor acknowledges fails it), cfn-lint
# (errors fail the run) and checkov (skipped checks and reasons: infra/.checkov.yaml).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}"
cd "$root/infra"
export CDK_DISABLE_CLI_TELEMETRY=true

req="$root/infra/requirements-checks.txt"
if ! cmp -s "$req" "$cache/iac/requirements.txt" || ! [ -x "$cache/iac/bin/checkov" ]; then
  echo "== installing cfn-lint and checkov"
  python3 -m venv "$cache/iac"
  "$cache/iac/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$cache/iac/requirements.txt"
fi

echo "== npm ci (infra)"
npm ci --no-audit --no-fund --loglevel=error

echo "== CDK assertion tests"
npx tsc -p .
node --test dist/test/

echo "== cdk synth"
rm -rf cdk.out
npx cdk synth --quiet --no-notices --no-version-reporting \
  -c stage=ci -c deletionProtection=false -c assetDir="$target_dir/lambda"
template=cdk.out/Boomerang-ci.template.json

echo "== cfn-lint"
"$cache/iac/bin/cfn-lint" --non-zero-exit-code error "$template"

echo "== checkov"
# --skip-download: checkov would otherwise try to fetch guidelines from its vendor.
"$cache/iac/bin/checkov" --skip-download --config-file .checkov.yaml -f "$template"
