//! `boomerang backup` beside a running `serve`: the copy is taken while registrations keep
//! coming (none of them refused or held up), holds every task acknowledged before it began
//! and none sent after it ended, and is a data directory a new server starts from as it
//! is, with the same API key and signing secret, delivering what was pending in it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use boomerang_client::{Client, ListParams};
use boomerang_core::domain::TaskId;
use boomerang_e2e::{
    callback, run_cli, wait_for, Callback, CliRun, Receiver, Server, ServerOptions,
};

/// How far ahead every task is due: far enough that the first server is stopped before
/// any of them comes due, so each delivery the receiver gets is the restored server's.
const DUE_IN: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_secs(30);

/// Tasks registered before the backup is started.
const BEFORE: usize = 20;

/// One registration of the loop that runs during the backup.
#[derive(Clone)]
struct Registration {
    id: TaskId,
    path: String,
    sent: Instant,
    acked: Instant,
}

/// Registers tasks one after another until stopped: each is sent once the previous one
/// was acknowledged, so the store commits them in the loop's order.
struct Registrar {
    stop: Arc<AtomicBool>,
    done: Arc<Mutex<Vec<Registration>>>,
    task: tokio::task::JoinHandle<Result<(), String>>,
}

impl Registrar {
    fn start(api: Client, rx: &Receiver) -> Self {
        let (stop, done) = (Arc::new(AtomicBool::new(false)), Arc::default());
        let base = rx.url("/during");
        let task = tokio::spawn(register_until(api, base, stop.clone(), Arc::clone(&done)));
        Self { stop, done, task }
    }

    /// Registrations sent after `t` and acknowledged.
    fn acked_sent_after(&self, t: Instant) -> usize {
        let done = self.done.lock().unwrap();
        done.iter().filter(|r| r.sent > t).count()
    }

    /// Stops the loop; every registration it sent was acknowledged with a 201.
    async fn stop(self) -> Vec<Registration> {
        self.stop.store(true, Ordering::SeqCst);
        if let Err(refused) = self.task.await.expect("the loop") {
            panic!("the server was disturbed during the backup: {refused}");
        }
        self.done.lock().unwrap().clone()
    }
}

async fn register_until(
    api: Client,
    base: String,
    stop: Arc<AtomicBool>,
    done: Arc<Mutex<Vec<Registration>>>,
) -> Result<(), String> {
    for i in 0.. {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let path = format!("/during/{i}");
        let task = callback(format!("{base}/{i}")).delay(&format!("{}s", DUE_IN.as_secs()));
        let sent = Instant::now();
        match api.create(&task, None).await {
            Ok(answer) if answer.status == 201 => done.lock().unwrap().push(Registration {
                id: answer.body.id,
                path,
                sent,
                acked: Instant::now(),
            }),
            other => return Err(format!("registration {i}: {other:?}")),
        }
    }
    Ok(())
}

/// Every task id the server lists.
async fn listed(api: &Client) -> HashSet<TaskId> {
    let mut ids = HashSet::new();
    let mut params = ListParams {
        limit: Some(100),
        ..ListParams::default()
    };
    loop {
        let page = api.list(&params).await.expect("a page of tasks");
        ids.extend(page.tasks.into_iter().map(|t| t.id));
        match page.next_cursor {
            Some(cursor) => params.cursor = Some(cursor),
            None => return ids,
        }
    }
}

/// `boomerang backup --data-dir FROM --to TO`, on a thread of its own so that the test's
/// registrations keep going meanwhile.
async fn backup(from: &Path, to: &Path) -> CliRun {
    let (from, to) = (from.display().to_string(), to.display().to_string());
    tokio::task::spawn_blocking(move || run_cli(&["backup", "--data-dir", &from, "--to", &to], &[]))
        .await
        .expect("the backup's thread")
}

/// A path for a backup that does not exist yet (the command creates it).
fn fresh_destination() -> PathBuf {
    std::env::temp_dir().join(format!("boomerang-e2e-backup-{}", ulid::Ulid::new()))
}

#[tokio::test]
async fn a_backup_taken_during_registrations_restores_every_task_acknowledged_before_it() {
    let rx = Receiver::always(200).await;
    // Generated credentials: the copy must carry them for the restored server to keep them.
    let mut server = Server::start(ServerOptions {
        generated_credentials: true,
        ..ServerOptions::default()
    });
    let first_registered = Instant::now();
    let due = format!("{}s", DUE_IN.as_secs());
    let mut before = Vec::new();
    for i in 0..BEFORE {
        let path = format!("/before/{i}");
        let task = server.register(&callback(rx.url(&path)).delay(&due)).await;
        before.push((task.id, path));
    }

    let registrar = Registrar::start(server.api(), &rx);
    wait_for("registrations to be under way", WAIT, || async {
        (registrar.acked_sent_after(first_registered) >= 5).then_some(())
    })
    .await;
    let began = Instant::now();
    let to = fresh_destination();
    let run = backup(&server.data_dir, &to).await;
    let ended = Instant::now();
    assert_eq!(run.code, 0, "{run:?}");
    // Registrations go on after the copy: those sent from now on must not be in it.
    wait_for("registrations after the backup", WAIT, || async {
        (registrar.acked_sent_after(ended) >= 5).then_some(())
    })
    .await;
    let during = registrar.stop().await;
    server.terminate(WAIT).await;
    assert!(
        first_registered.elapsed() < DUE_IN,
        "the first server ran until its tasks came due: the test proves nothing"
    );
    assert!(
        rx.received().is_empty(),
        "the first server delivered nothing"
    );

    let restored = Server::start(ServerOptions {
        data_dir: Some(to.clone()),
        generated_credentials: true,
        ..ServerOptions::default()
    });
    assert_eq!(restored.api_key, server.api_key, "the same API key");
    assert_eq!(restored.secret.expose(), server.secret.expose());

    let kept = listed(&restored.api()).await;
    assert!(
        run.stdout.contains(&format!("{} tasks", kept.len())),
        "the command counts what it copied: {}",
        run.stdout
    );
    for (id, path) in &before {
        assert!(
            kept.contains(id),
            "{path}, registered before the backup, is gone"
        );
    }
    let in_copy = check_during(&during, &kept, began, ended);
    assert_eq!(
        kept.len(),
        BEFORE + in_copy.len(),
        "nothing else in the copy"
    );

    // What was pending in the copy is delivered by the restored server, signed with the
    // secret the copy carried.
    let expected: HashSet<&str> = (before.iter().map(|(_, p)| p.as_str()))
        .chain(in_copy.iter().map(|r| r.path.as_str()))
        .collect();
    wait_for(
        "every task in the copy to be delivered",
        DUE_IN + WAIT,
        || async {
            let got: HashSet<String> = rx.received().into_iter().map(|r| r.path).collect();
            expected.iter().all(|p| got.contains(*p)).then_some(())
        },
    )
    .await;
    for call in rx.received() {
        assert!(
            expected.contains(call.path.as_str()),
            "{} was not in the copy",
            call.path
        );
        assert!(
            restored.signed(&call),
            "{} is signed with the copied secret",
            call.path
        );
    }
}

/// The loop's registrations in the copy: all those acknowledged before the backup began,
/// none sent after it ended, and, since the loop registers one at a time, a first part of
/// the loop's order (a copy of one moment, not of pieces of several).
fn check_during<'a>(
    during: &'a [Registration],
    kept: &HashSet<TaskId>,
    began: Instant,
    ended: Instant,
) -> Vec<&'a Registration> {
    let in_copy: Vec<&Registration> = during.iter().filter(|r| kept.contains(&r.id)).collect();
    assert_eq!(
        in_copy.iter().map(|r| &r.id).collect::<Vec<_>>(),
        during[..in_copy.len()]
            .iter()
            .map(|r| &r.id)
            .collect::<Vec<_>>(),
        "the copy holds a first part of the loop's registrations"
    );
    for r in during {
        if r.acked < began {
            assert!(
                kept.contains(&r.id),
                "{} was acknowledged before the backup",
                r.path
            );
        }
        if r.sent > ended {
            assert!(
                !kept.contains(&r.id),
                "{} was sent after the backup",
                r.path
            );
        }
    }
    in_copy
}

#[tokio::test]
async fn a_backup_to_a_directory_with_files_in_it_is_refused() {
    let server = Server::start(ServerOptions::default());
    let to = fresh_destination();
    std::fs::create_dir_all(&to).unwrap();
    std::fs::write(to.join("keep.txt"), "not a backup's").unwrap();
    let data_dir = server.data_dir.display().to_string();
    let to_arg = to.display().to_string();

    let run = run_cli(&["backup", "--data-dir", &data_dir, "--to", &to_arg], &[]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("--to") && run.stderr.contains("is not empty"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    let left: Vec<_> = std::fs::read_dir(&to).unwrap().collect();
    assert_eq!(left.len(), 1, "the directory is left as it was");

    // And a directory `serve` never ran on is refused by name too.
    let empty = fresh_destination();
    std::fs::create_dir_all(&empty).unwrap();
    let run = run_cli(
        &[
            "backup",
            "--data-dir",
            &empty.display().to_string(),
            "--to",
            &to_arg,
        ],
        &[],
    );
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("--data-dir"), "{run:?}");
    for dir in [to, empty] {
        let _ = std::fs::remove_dir_all(dir);
    }
}
