//! Every task a case's servers spawn, so the harness can stop them all
//! before it counts the runtime's tasks (a server task still alive would
//! hide, or fake, a task the client left behind).

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::task::AbortHandle;

#[derive(Clone, Default)]
pub struct Tasks(Arc<Mutex<Vec<AbortHandle>>>);

impl Tasks {
    pub fn spawn<F>(&self, fut: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let handle = tokio::spawn(fut).abort_handle();
        self.0.lock().unwrap().push(handle);
    }

    /// Aborts every task spawned so far (and, through the loop, any spawned
    /// while aborting).
    pub fn abort_all(&self) {
        loop {
            let handles: Vec<AbortHandle> = std::mem::take(&mut *self.0.lock().unwrap());
            if handles.is_empty() {
                return;
            }
            for h in handles {
                h.abort();
            }
        }
    }
}
