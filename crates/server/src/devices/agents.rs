//! External agents run on devices (`external:KIND@NAME`): the driver asks the gateway to start
//! one ([`GatewayAgents`]); the device starts it in its directory and streams its output back
//! line by line; the driver reads it as it would a local process's, and a stop (a limit, a
//! cancel) goes to the device. A device whose connection drops while its agent runs ends the
//! run with its outcome unknown (it is not started again).

use super::DeviceGateway;
use super::protocol::{AgentStart, ServerMessage};
use futures::future::BoxFuture;
use rein_core::OperationId;
use rein_operation::external::{AgentRun, EndUnknown, RemoteAgents, RemoteStart, StartError};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What reaches a running agent's reader.
pub(crate) enum AgentFrame {
    /// A line it printed.
    Line(String),
    /// It ended (or the device refused to start it).
    Ended {
        code: Option<i32>,
        stderr: String,
        refused: Option<String>,
    },
    /// The device's connection dropped.
    Lost,
}

/// Starts external agents on this server's connected devices.
pub struct GatewayAgents(pub Arc<DeviceGateway>);

impl RemoteAgents for GatewayAgents {
    fn start(&self, run: RemoteStart) -> Result<Box<dyn AgentRun>, StartError> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.0
            .register_agent(run.operation_id, &run.owner, &run.device, tx);
        let sent = self.0.send_if_connected(
            &run.owner,
            &run.device,
            ServerMessage::RunAgent(AgentStart {
                operation_id: run.operation_id,
                kind: run.kind.as_str().to_owned(),
                args: run.args,
                input: run.input,
                session: run.session,
            }),
        );
        if !sent {
            self.0.forget_agent(run.operation_id);
            return Err(StartError::DeviceOffline(run.device));
        }
        Ok(Box::new(RemoteRun {
            gateway: Arc::clone(&self.0),
            operation: run.operation_id,
            owner: run.owner,
            device: run.device,
            rx,
            end: None,
        }))
    }
}

/// An agent running on a device, as its reader sees it.
struct RemoteRun {
    gateway: Arc<DeviceGateway>,
    operation: OperationId,
    owner: String,
    device: String,
    rx: mpsc::UnboundedReceiver<AgentFrame>,
    end: Option<Result<(Option<i32>, String), EndUnknown>>,
}

impl RemoteRun {
    fn ended(&mut self, frame: AgentFrame) -> Option<String> {
        match frame {
            AgentFrame::Line(l) => return Some(l),
            AgentFrame::Ended {
                refused: Some(why), ..
            } => self.end = Some(Err(EndUnknown::Refused(why))),
            AgentFrame::Ended { code, stderr, .. } => self.end = Some(Ok((code, stderr))),
            AgentFrame::Lost => self.end = Some(Err(EndUnknown::Lost(self.device.clone()))),
        }
        None
    }
}

impl AgentRun for RemoteRun {
    fn next_line(&mut self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async move {
            if self.end.is_some() {
                return None;
            }
            let frame = self.rx.recv().await.unwrap_or(AgentFrame::Lost);
            self.ended(frame)
        })
    }

    fn stop(&mut self) -> BoxFuture<'_, ()> {
        let stop = ServerMessage::StopAgent {
            operation_id: self.operation,
        };
        self.gateway.send(&self.owner, &self.device, stop);
        Box::pin(async {})
    }

    fn finish(
        mut self: Box<Self>,
        grace: Duration,
    ) -> BoxFuture<'static, Result<(Option<i32>, String), EndUnknown>> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + grace;
            while self.end.is_none() {
                match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                    Ok(Some(frame)) => {
                        self.ended(frame);
                    }
                    Ok(None) => {
                        self.ended(AgentFrame::Lost);
                    }
                    Err(_) => self.end = Some(Err(EndUnknown::Silent(self.device.clone()))),
                }
            }
            self.gateway.forget_agent(self.operation);
            self.end
                .take()
                .unwrap_or_else(|| Err(EndUnknown::Silent(self.device.clone())))
        })
    }
}
