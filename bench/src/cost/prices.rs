//! The price list the meter uses: us-east-1, on demand, as published.

pub const DYNAMODB_PER_MILLION_WRITE_UNITS: f64 = 0.625;
pub const DYNAMODB_PER_MILLION_READ_UNITS: f64 = 0.125;
/// Per million requests; each started 64 KiB of payload is one request.
pub const SQS_PER_MILLION_REQUESTS: f64 = 0.40;
pub const SCHEDULER_PER_MILLION_INVOCATIONS: f64 = 1.00;
/// HTTP API.
pub const API_GATEWAY_PER_MILLION_REQUESTS: f64 = 1.00;
/// arm64.
pub const LAMBDA_PER_MILLION_REQUESTS: f64 = 0.20;
pub const LAMBDA_PER_GB_SECOND: f64 = 0.000_013_333_4;
pub const LOGS_PER_GB: f64 = 0.50;

pub fn print_price_list() {
    println!("prices (us-east-1, on demand):");
    println!("  DynamoDB          ${DYNAMODB_PER_MILLION_WRITE_UNITS:.3} per million write units, ${DYNAMODB_PER_MILLION_READ_UNITS:.3} per million read units");
    println!(
        "  SQS               ${SQS_PER_MILLION_REQUESTS:.2} per million requests (per 64 KiB)"
    );
    println!("  Scheduler         ${SCHEDULER_PER_MILLION_INVOCATIONS:.2} per million invocations");
    println!(
        "  API Gateway       ${API_GATEWAY_PER_MILLION_REQUESTS:.2} per million HTTP API requests"
    );
    println!("  Lambda (arm64)    ${LAMBDA_PER_MILLION_REQUESTS:.2} per million requests + ${LAMBDA_PER_GB_SECOND} per GB-second");
    println!("  CloudWatch Logs   ${LOGS_PER_GB:.2} per GB ingested");
}

/// A Lambda duration as billed: rounded up to the millisecond.
pub fn billed(seconds: f64) -> f64 {
    (seconds * 1000.0).ceil() / 1000.0
}
