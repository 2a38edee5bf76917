//! The flags checked against each other and resolved into a [`Load`] (who sends how much,
//! how): the defaults filled in, the load model chosen, contradictions refused with a reason.
//!
//! Why apart from the flags and from the load: the flags are what was asked for (the report's
//! `config`), the load is what runs (the report's `load`), and the rules between them are their
//! own concept.

use std::time::Duration;

use super::super::pacer::{self, Pacer};
use super::load::{
    Load, Model, Stop, DEFAULT_CONCURRENCY, DEFAULT_DELAY, DEFAULT_DURATION, DEFAULT_OPEN_LOOP_CAP,
};
use super::{BenchArgs, Scenario};
use crate::error::{CliError, Result};
use crate::secs::Secs;

impl BenchArgs {
    /// Checks the flags against each other and fills in the defaults.
    pub fn load(&self) -> Result<Load> {
        let pacer = self.pacer()?;
        self.tick()?;
        let rate = match &pacer {
            Some(pacer) => Some(pacer.peak()),
            None => self.rate,
        };
        let model = match (self.scenario, rate) {
            (Scenario::Longpoll, Some(_)) => {
                return Err(CliError::new(
                    "--rate and --stages do not apply to --scenario longpoll (long polls hold -c requests in flight)",
                ))
            }
            (Scenario::Longpoll, None) => Model::LongPoll {
                delay: self.delay.map_or(DEFAULT_DELAY, Secs::as_duration),
            },
            (Scenario::Requests, _) if self.delay.is_some() => {
                return Err(CliError::new(
                    "--delay applies to --scenario longpoll; for slow responses use --path /delay/{ms}",
                ))
            }
            (Scenario::Requests | Scenario::Cluster, Some(rate)) => Model::Open { rate },
            (Scenario::Requests | Scenario::Cluster, None) => Model::Closed,
        };
        let (clients, max_connections_per_host, explicit) = match self.connections {
            Some(k) => (k, Some(1), Some(self.streams.unwrap_or(1))),
            None => (
                self.clients.unwrap_or(1),
                self.max_connections_per_host,
                self.concurrency,
            ),
        };
        let concurrency = match (explicit, model) {
            (Some(c), _) => c,
            // An open loop's in-flight cap is the pool's connection cap by default, as in wrk2:
            // a request then waits for a free connection in the load generator, where its
            // delay counts as coordinated omission, not unseen in the pool's queue.
            (None, Model::Open { .. }) => max_connections_per_host.unwrap_or(DEFAULT_OPEN_LOOP_CAP),
            (None, _) => DEFAULT_CONCURRENCY,
        };
        let stop = match (self.requests, self.duration, model) {
            _ if pacer.as_ref().and_then(Pacer::total).is_some() => {
                Stop::Duration(pacer.as_ref().and_then(Pacer::total).unwrap_or_default())
            }
            (Some(n), _, _) => Stop::Requests(n),
            (None, Some(secs), _) => Stop::Duration(secs.as_duration()),
            (None, None, Model::LongPoll { .. }) => Stop::OneRound,
            (None, None, _) => Stop::Duration(DEFAULT_DURATION),
        };
        let warmup = self.warmup.map_or(Duration::ZERO, Secs::as_duration);
        if stop == Stop::OneRound && !warmup.is_zero() {
            return Err(CliError::new(
                "--warmup needs -d or -n with --scenario longpoll (by default each slot sends one long poll)",
            ));
        }
        Ok(Load {
            model,
            clients,
            concurrency,
            max_connections_per_host,
            stop,
            warmup,
        })
    }

    /// `--tick`: the open loop sends only on ticks of this period.
    pub fn tick(&self) -> Result<Option<Duration>> {
        let Some(tick) = self.tick else {
            return Ok(None);
        };
        if self.rate.is_none() && self.stages.is_none() {
            return Err(CliError::new(
                "--tick applies to the open loop: add --rate or --stages",
            ));
        }
        if self.scenario != Scenario::Requests {
            return Err(CliError::new(
                "--tick applies to the open loop of --scenario requests",
            ));
        }
        Ok(Some(tick.as_duration()))
    }

    /// When open-loop requests are due: `--stages` (from `--rate`, else 0) or `--rate`; `None`
    /// for the closed loop.
    pub fn pacer(&self) -> Result<Option<Pacer>> {
        match (&self.stages, self.rate) {
            (Some(text), rate) => {
                let stages = pacer::parse_stages(text).map_err(CliError::new)?;
                Ok(Some(Pacer::staged(rate.unwrap_or(0.0), stages)))
            }
            (None, Some(rate)) => Ok(Some(Pacer::constant(rate))),
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::parse;
    use super::*;

    #[test]
    fn defaults() {
        let args = parse(&[]).unwrap();
        assert_eq!(args.url, None);
        assert_eq!(args.concurrency, None);
        assert_eq!(args.read_bytes, None);
        assert_eq!(args.method, "GET");
        assert_eq!(args.response_size, 128);
        assert_eq!(args.pool_idle_timeout, None);
        let load = args.load().unwrap();
        assert_eq!(load.model, Model::Closed);
        assert_eq!((load.clients, load.concurrency), (1, DEFAULT_CONCURRENCY));
        assert_eq!(load.stop, Stop::Duration(DEFAULT_DURATION));
        assert_eq!(load.warmup, Duration::ZERO);
        assert!(!args.server_in_child_process());
    }

    #[test]
    fn connections_and_streams_are_h2loads_model() {
        let load = parse(&["--connections", "4", "--streams", "10"])
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(load.clients, 4);
        assert_eq!(load.concurrency, 10);
        assert_eq!(load.max_connections_per_host, Some(1));
        let load = parse(&["--connections", "4"]).unwrap().load().unwrap();
        assert_eq!(load.concurrency, 1);
    }

    #[test]
    fn open_loop_cap_follows_the_connection_cap() {
        let load = parse(&["--rate", "200", "--max-connections-per-host", "2"])
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(load.model, Model::Open { rate: 200.0 });
        assert_eq!(load.concurrency, 2);
        let load = parse(&["--rate", "200"]).unwrap().load().unwrap();
        assert_eq!(load.concurrency, DEFAULT_OPEN_LOOP_CAP);
        let load = parse(&["--rate", "200", "-c", "7"])
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(load.concurrency, 7);
    }

    #[test]
    fn a_tick_is_a_duration_with_its_unit_and_only_for_the_open_loop() {
        let args = parse(&["--rate", "200", "--tick", "10ms"]).unwrap();
        assert_eq!(args.tick().unwrap(), Some(Duration::from_millis(10)));
        assert!(args.load().is_ok());
        let staged = parse(&["--stages", "1s:100", "--tick", "2500us"]).unwrap();
        assert_eq!(staged.tick().unwrap(), Some(Duration::from_micros(2500)));
        assert_eq!(parse(&["--rate", "200"]).unwrap().tick().unwrap(), None);
        let closed = parse(&["--tick", "10ms"]).unwrap();
        assert!(closed.load().unwrap_err().to_string().contains("--rate"));
        // A bare number is refused: read as seconds, `10` would be a tick of 10 s.
        for bad in ["10", "0.01", "0ms", "-1ms", "x", "2m"] {
            assert!(parse(&["--rate", "200", "--tick", bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn stages_make_an_open_loop_as_long_as_the_stages() {
        let args = parse(&["--stages", "1s:100,500ms:300,2s:0"]).unwrap();
        let load = args.load().unwrap();
        assert_eq!(load.model, Model::Open { rate: 300.0 });
        assert_eq!(load.stop, Stop::Duration(Duration::from_millis(3500)));
        assert_eq!(load.concurrency, DEFAULT_OPEN_LOOP_CAP);
        let pacer = parse(&["--stages", "1s:100", "--rate", "50"])
            .unwrap()
            .pacer()
            .unwrap()
            .unwrap();
        assert_eq!(pacer.rate_at(0.0), 50.0);
        for argv in [
            &["--stages", "1s:100", "-d", "5"][..],
            &["--stages", "1s:100", "-n", "5"],
            &["--stages", "1s:100", "--warmup", "1"],
            &["--stages", "1s"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} should be refused");
        }
        let err = parse(&["--stages", "1s:5", "--scenario", "longpoll"])
            .unwrap()
            .load()
            .unwrap_err();
        assert!(err.to_string().contains("--stages"), "{err}");
    }

    #[test]
    fn longpoll_defaults_to_one_round_in_a_child_server() {
        let args = parse(&["--scenario", "longpoll", "-c", "200", "--delay", "1"]).unwrap();
        let load = args.load().unwrap();
        assert_eq!(
            load.model,
            Model::LongPoll {
                delay: Duration::from_secs(1)
            }
        );
        assert_eq!(load.stop, Stop::OneRound);
        assert!(args.server_in_child_process());
        let args = parse(&["--scenario", "longpoll", "--server", "in-process"]).unwrap();
        assert!(!args.server_in_child_process());
    }

    #[test]
    fn duration_flag() {
        let load = parse(&["-d", "1"]).unwrap().load().unwrap();
        assert_eq!(load.stop, Stop::Duration(Duration::from_secs(1)));
    }

    #[test]
    fn refuses_contradicting_flags_with_a_reason() {
        for (argv, needle) in [
            (&["--scenario", "longpoll", "--rate", "5"][..], "--rate"),
            (&["--delay", "1"], "--delay"),
            (&["--scenario", "longpoll", "--warmup", "1"], "--warmup"),
        ] {
            let err = parse(argv).unwrap().load().unwrap_err();
            assert!(err.to_string().contains(needle), "{argv:?}: {err}");
        }
    }
}
