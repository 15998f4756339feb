//! End-to-end: SIGTERM on the real `boomerang serve`. The calls under way end within the
//! grace and are not sent again; those the grace does not cover are handed back, due at
//! the next start at once (not after their lease).

use std::time::Duration;

use boomerang_core::domain::Status;
use boomerang_e2e::{callback, wait_for, Backend, Receiver, Reply, Server, ServerOptions};

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn sigterm_lets_the_calls_under_way_end_and_none_is_sent_twice() {
    // Each call takes 2 s; 64 of them are under way at once when the signal comes.
    let rx = Receiver::start(|_, _| Reply {
        delay: Duration::from_secs(2),
        ..Reply::status(200)
    })
    .await;
    let mut server = Server::start(ServerOptions {
        destination_limit: Some(64),
        ..ServerOptions::on(Backend::Embedded)
    });
    let mut ids = Vec::new();
    for n in 0..64 {
        let task = server.register(&callback(rx.url(&format!("/t/{n}")))).await;
        ids.push(task.id);
    }
    wait_for("64 calls under way", WAIT, || async {
        (rx.received().len() == 64).then_some(())
    })
    .await;
    let (status, took) = server.terminate(Duration::from_secs(30)).await;
    assert!(status.success(), "{status:?}");
    println!("exit {took:?} after SIGTERM, with 64 calls of 2 s under way (grace 30 s)");
    assert!(
        server.log().contains("finished=64 handed_back=0"),
        "every call ended within the grace: {}",
        server.log()
    );
    server.restart();
    for id in &ids {
        let task = server.wait_status(id, Status::Succeeded, WAIT).await;
        assert_eq!(task.attempts.unwrap_or_default().len(), 1);
    }
    // Settle: a duplicate would arrive within the next sweep.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for n in 0..64 {
        assert_eq!(rx.count(&format!("/t/{n}")), 1, "/t/{n} was called again");
    }
}

#[tokio::test]
async fn a_call_still_under_way_when_the_grace_ends_is_made_again_at_the_next_start() {
    // The first call to each path hangs past the grace; the next is answered at once.
    let rx = Receiver::start(|_, seen| Reply {
        delay: if seen == 0 {
            Duration::from_secs(50)
        } else {
            Duration::ZERO
        },
        ..Reply::status(200)
    })
    .await;
    let mut server = Server::start(ServerOptions {
        extra_args: vec!["--shutdown-grace".into(), "1s".into()],
        ..ServerOptions::on(Backend::Embedded)
    });
    let mut ids = Vec::new();
    for n in 0..3 {
        // A 60 s timeout: its lease (70 s) would hold it long after the restart.
        let task = callback(rx.url(&format!("/h/{n}")));
        let task = boomerang_api::request::TaskRequest {
            timeout: Some("60s".parse().unwrap()),
            ..task
        };
        ids.push(server.register(&task).await.id);
    }
    wait_for("3 calls under way", WAIT, || async {
        (rx.received().len() == 3).then_some(())
    })
    .await;
    let (status, took) = server.terminate(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}");
    assert!(
        took < Duration::from_secs(8),
        "exited {took:?} after SIGTERM"
    );
    assert!(server.log().contains("handed_back=3"), "{}", server.log());
    server.restart();
    for id in &ids {
        let task = server
            .wait_status(id, Status::Succeeded, Duration::from_secs(20))
            .await;
        let attempts = task.attempts.unwrap_or_default();
        assert_eq!(attempts.len(), 1, "the handed-back call was no attempt");
    }
}

#[tokio::test]
async fn a_second_sigterm_hands_the_calls_under_way_back_without_waiting_out_the_grace() {
    // The first call hangs past the 45 s grace; the next is answered at once.
    let rx = Receiver::start(|_, seen| Reply {
        delay: if seen == 0 {
            Duration::from_secs(90)
        } else {
            Duration::ZERO
        },
        ..Reply::status(200)
    })
    .await;
    let mut server = Server::start(ServerOptions {
        extra_args: vec!["--shutdown-grace".into(), "45s".into()],
        ..ServerOptions::on(Backend::Embedded)
    });
    // A 60 s timeout: its lease would hold it long after the restart.
    let task = boomerang_api::request::TaskRequest {
        timeout: Some("60s".parse().unwrap()),
        ..callback(rx.url("/h"))
    };
    let id = server.register(&task).await.id;
    wait_for("the call under way", WAIT, || async {
        (rx.received().len() == 1).then_some(())
    })
    .await;
    server.sigterm();
    wait_for("the drain under way", WAIT, || async {
        server.log().contains("stopping: no new").then_some(())
    })
    .await;
    let (status, took) = server.terminate(Duration::from_secs(20)).await;
    assert!(status.success(), "{status:?}");
    println!("exit {took:?} after the second SIGTERM (grace 45 s)");
    let log = server.log();
    assert!(log.contains("a second stop signal"), "{log}");
    assert!(log.contains("handed_back=1"), "{log}");
    server.restart();
    let done = server
        .wait_status(&id, Status::Succeeded, Duration::from_secs(20))
        .await;
    assert_eq!(done.attempts.unwrap_or_default().len(), 1);
    assert_eq!(rx.count("/h"), 2, "called again after the restart");
}
