//! Spark Connect sessions: one engine session per client `session_id`, a stable
//! server-side id, the Spark configuration the client set, and the running operations
//! an interrupt can cancel.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use crate::backend::{EngineSession, SessionFactory};
use crate::error::{ConnectError, ConnectResult};

/// One client session.
#[derive(Debug)]
pub struct Session {
    pub session_id: String,
    /// Fixed for the life of the session; the client closes its session if it changes.
    pub server_side_id: String,
    pub engine: Arc<dyn EngineSession>,
    /// Spark keys the client set that the engine does not own (`spark.sql.*`, ...).
    spark_conf: Mutex<BTreeMap<String, String>>,
    operations: Mutex<HashMap<String, RunningOperation>>,
    /// Names of the temporary views the client created.
    temp_views: Mutex<BTreeSet<String>>,
    /// Tables marked with `cacheTable`.
    cached: Mutex<BTreeSet<String>>,
}

#[derive(Debug)]
struct RunningOperation {
    tags: Vec<String>,
    cancel: watch::Sender<bool>,
}

/// Locks a mutex; a panic while it was held leaves plain data that is still usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes an operation from its session when its execution ends, however it ends.
#[derive(Debug)]
pub struct OperationGuard {
    session: Arc<Session>,
    operation_id: String,
}

impl Drop for OperationGuard {
    fn drop(&mut self) {
        lock(&self.session.operations).remove(&self.operation_id);
    }
}

/// What an interrupt names.
#[derive(Debug, Clone)]
pub enum InterruptTarget {
    All,
    Tag(String),
    Operation(String),
}

impl Session {
    fn new(session_id: String, engine: Arc<dyn EngineSession>) -> Self {
        Self {
            session_id,
            server_side_id: uuid::Uuid::new_v4().to_string(),
            engine,
            spark_conf: Mutex::new(BTreeMap::new()),
            operations: Mutex::new(HashMap::new()),
            temp_views: Mutex::new(BTreeSet::new()),
            cached: Mutex::new(BTreeSet::new()),
        }
    }

    pub fn is_temp_view(&self, name: &str) -> bool {
        lock(&self.temp_views).contains(name)
    }

    pub fn remember_temp_view(&self, name: &str) {
        lock(&self.temp_views).insert(name.to_string());
    }

    pub fn forget_temp_view(&self, name: &str) {
        lock(&self.temp_views).remove(name);
    }

    pub fn is_cached(&self, name: &str) -> bool {
        lock(&self.cached).contains(&name.to_ascii_lowercase())
    }

    /// Marks a table cached or not. While any table is cached, the engine keeps the
    /// inputs of GPU segments resident on the GPU (today for all of the session's
    /// in-memory tables, not only the cached ones).
    pub fn set_cached(&self, name: &str, cached: bool) {
        let name = name.to_ascii_lowercase();
        let mut set = lock(&self.cached);
        if cached {
            set.insert(name);
        } else {
            set.remove(&name);
        }
        self.engine.set_gpu_resident(!set.is_empty());
    }

    pub fn clear_cached(&self) {
        lock(&self.cached).clear();
        self.engine.set_gpu_resident(false);
    }

    /// A Spark key the client set, if any.
    pub fn spark_conf(&self, key: &str) -> Option<String> {
        lock(&self.spark_conf).get(key).cloned()
    }

    pub fn set_spark_conf(&self, key: &str, value: &str) {
        lock(&self.spark_conf).insert(key.to_string(), value.to_string());
    }

    pub fn unset_spark_conf(&self, key: &str) {
        lock(&self.spark_conf).remove(key);
    }

    /// Every Spark key the client set.
    pub fn spark_conf_entries(&self) -> Vec<(String, String)> {
        lock(&self.spark_conf)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Registers a running operation; the receiver turns `true` when it is interrupted.
    pub fn start_operation(
        self: &Arc<Self>,
        operation_id: &str,
        tags: Vec<String>,
    ) -> ConnectResult<(OperationGuard, watch::Receiver<bool>)> {
        let mut operations = lock(&self.operations);
        if operations.contains_key(operation_id) {
            return Err(ConnectError::invalid(format!(
                "[INVALID_HANDLE.OPERATION_ALREADY_EXISTS] The operation {operation_id} already exists"
            )));
        }
        let (cancel, cancelled) = watch::channel(false);
        operations.insert(operation_id.to_string(), RunningOperation { tags, cancel });
        Ok((
            OperationGuard {
                session: Arc::clone(self),
                operation_id: operation_id.to_string(),
            },
            cancelled,
        ))
    }

    /// Cancels the operations `target` names and returns their ids.
    pub fn interrupt(&self, target: &InterruptTarget) -> Vec<String> {
        let operations = lock(&self.operations);
        let mut interrupted = Vec::new();
        for (id, operation) in operations.iter() {
            let hit = match target {
                InterruptTarget::All => true,
                InterruptTarget::Tag(tag) => operation.tags.iter().any(|t| t == tag),
                InterruptTarget::Operation(wanted) => id == wanted,
            };
            if hit {
                // A send fails only when the execution already ended.
                let _ = operation.cancel.send(true);
                interrupted.push(id.clone());
            }
        }
        interrupted
    }
}

/// All sessions of one server.
pub struct Sessions {
    factory: Arc<dyn SessionFactory>,
    live: Mutex<HashMap<(String, String), Arc<Session>>>,
    released: Mutex<HashSet<(String, String)>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("live", &lock(&self.live).len())
            .finish()
    }
}

impl Sessions {
    pub fn new(factory: Arc<dyn SessionFactory>) -> Self {
        Self {
            factory,
            live: Mutex::new(HashMap::new()),
            released: Mutex::new(HashSet::new()),
        }
    }

    /// The session `session_id` of `user_id`, created on first use.
    ///
    /// `observed` is the server-side id the client saw before: a different one means the
    /// client's session is gone (the server restarted or released it).
    pub fn get_or_create(
        &self,
        user_id: &str,
        session_id: &str,
        observed: Option<&str>,
    ) -> ConnectResult<Arc<Session>> {
        if uuid::Uuid::parse_str(session_id).is_err() {
            return Err(ConnectError::invalid(format!(
                "[INVALID_HANDLE.FORMAT] The session id '{session_id}' is not a UUID"
            )));
        }
        let key = (user_id.to_string(), session_id.to_string());
        if lock(&self.released).contains(&key) {
            return Err(ConnectError::session_changed(format!(
                "[INVALID_HANDLE.SESSION_CLOSED] The session {session_id} was released"
            )));
        }
        let mut live = lock(&self.live);
        let session = match live.get(&key) {
            Some(session) => Arc::clone(session),
            None => {
                let engine = self.factory.new_session()?;
                crate::plan::install_spark_range(engine.context())?;
                let session = Arc::new(Session::new(session_id.to_string(), engine));
                live.insert(key, Arc::clone(&session));
                session
            }
        };
        if let Some(observed) = observed
            && observed != session.server_side_id
        {
            return Err(ConnectError::session_changed(format!(
                "[INVALID_HANDLE.SESSION_CHANGED] The existing Spark server driver instance \
                 has restarted; the session {session_id} must be recreated"
            )));
        }
        Ok(session)
    }

    /// Ends a session: interrupts its operations and forgets its state.
    pub fn release(&self, user_id: &str, session_id: &str, allow_reconnect: bool) -> String {
        let key = (user_id.to_string(), session_id.to_string());
        let removed = lock(&self.live).remove(&key);
        if !allow_reconnect {
            lock(&self.released).insert(key);
        }
        match removed {
            Some(session) => {
                session.interrupt(&InterruptTarget::All);
                session.server_side_id.clone()
            }
            None => String::new(),
        }
    }
}
