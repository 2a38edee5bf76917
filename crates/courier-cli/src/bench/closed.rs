//! The closed loop: request slots that send, wait for the response, and send again.
//!
//! N clients × C slots each, as in the .NET HttpClient benchmark (`--clients`, `-c`), or K
//! single-connection clients × M slots (`--connections`, `--streams`, h2load's model). Long
//! polls use the same slots with the in-flight counter on. A slot is one small task: the plan
//! and client handles, its slot number and the request being sent — everything it measures goes
//! into its thread's tally, so it holds no histogram of its own.

use std::sync::Arc;

use courier::Client;

use super::plan::{Admit, Plan};
use super::request;
use crate::error::{CliError, Result};

/// Runs `per_client` slots on each client until the plan's budget is spent.
pub async fn run(plan: &Arc<Plan>, clients: &[Client], per_client: u64) -> Result<()> {
    let mut handles = Vec::new();
    let mut slot = 0usize;
    for client in clients {
        for _ in 0..per_client {
            handles.push(tokio::spawn(worker(Arc::clone(plan), client.clone(), slot)));
            slot += 1;
        }
    }
    for handle in handles {
        handle
            .await
            .map_err(|e| CliError::new(format!("a benchmark worker failed: {e}")))?;
    }
    Ok(())
}

/// One request slot: send, read, record, repeat until the budget is spent.
pub async fn worker(plan: Arc<Plan>, client: Client, slot: usize) {
    let one_round = matches!(plan.budget, super::plan::Budget::OneRound);
    loop {
        let measured = match plan.admit() {
            Admit::Stop => break,
            Admit::Warmup => false,
            Admit::Measured => true,
        };
        let in_flight = plan.in_flight.as_ref().map(|counter| counter.enter());
        let sent = plan
            .until_deadline(request::send(&client, &plan.template, slot))
            .await;
        drop(in_flight);
        let Some(outcome) = sent else { break };
        if measured {
            plan.record(outcome);
        }
        if one_round && measured {
            break;
        }
    }
}
