//! End-to-end: one tenant cannot take the server from the others: over its rate, or its
//! number of unfinished tasks, it is answered 429 with `Retry-After`, and the other
//! tenant is served meanwhile.

use std::time::Duration;

use boomerang_client::ClientError;
use boomerang_e2e::{callback, wait_for, Backend, Callback, Receiver, Server, ServerOptions};
use futures_util::future::join_all;
use reqwest::Method;

fn over_limit(e: &ClientError) -> bool {
    e.status() == Some(429)
        && e.problem()
            .is_some_and(|p| p.kind == "urn:boomerang:problem:too-many-requests")
}

#[tokio::test]
async fn a_tenant_over_its_rate_gets_429_and_the_other_tenant_is_served() {
    let server = Server::start(ServerOptions {
        extra_args: vec!["--tenant-rate".into(), "5".into()],
        ..ServerOptions::on(Backend::Aws)
    });
    let noisy = server.api();
    let quiet = noisy.with_key(server.mint_key("quiet"));
    // Two seconds' worth (10) pass; the rest of 40 at once are refused.
    let flood = join_all((0..40).map(|_| noisy.stats())).await;
    let refused = flood
        .iter()
        .filter(|r| r.as_ref().is_err_and(over_limit))
        .count();
    let served = flood.iter().filter(|r| r.is_ok()).count();
    assert_eq!(served + refused, 40, "only 200s and 429s");
    assert!((8..=12).contains(&served), "{served} served");
    let answer = server
        .request(Method::GET, "/v1/stats")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 429);
    let retry_after: u64 = answer.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "Retry-After: {retry_after}");
    // The other tenant has its own allowance.
    for _ in 0..5 {
        quiet.stats().await.unwrap();
    }
    // And the noisy one is let in again once its allowance refills.
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    noisy.stats().await.unwrap();
}

#[tokio::test]
async fn a_tenant_at_its_limit_of_unfinished_tasks_gets_429_until_one_ends() {
    let rx = Receiver::always(200).await;
    let server = Server::start(ServerOptions {
        extra_args: vec!["--max-pending".into(), "3".into()],
        ..ServerOptions::on(Backend::Embedded)
    });
    let api = server.api();
    let later = || callback(rx.url("/later")).delay("1h");
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(server.register(&later()).await.id);
    }
    let refused = api.create(&later(), None).await.unwrap_err();
    assert!(over_limit(&refused), "{refused:?}");
    api.cancel(&ids[0]).await.unwrap();
    let again = wait_for("room for a task again", Duration::from_secs(15), || async {
        api.create(&later(), None).await.ok()
    })
    .await;
    assert_eq!(again.status, 201);
}
