//! The response stream of one execution, which an interrupt ends at once.
//!
//! A query's work runs on the query runtime, whose worker threads DataFusion can keep
//! busy for seconds between two yields (a large nested-loop join, say). An interrupt
//! must not wait for them: this stream is polled by the RPC runtime, so when the
//! operation is interrupted it answers `OPERATION_CANCELED` and ends right away, and it
//! aborts the work, which stops at its next yield. Dropping the stream (the client went
//! away) aborts the work too.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::watch;
use tokio::task::AbortHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use crate::error::ConnectError;

/// Responses of one execution until it completes or is interrupted.
pub struct InterruptibleResponses<T> {
    responses: ReceiverStream<Result<T, Status>>,
    interrupted: Pin<Box<dyn Future<Output = ()> + Send>>,
    work: AbortHandle,
    ended: bool,
}

impl<T> InterruptibleResponses<T> {
    /// `responses` are what `work` sends; `cancelled` turns `true` on an interrupt.
    pub fn new(
        responses: ReceiverStream<Result<T, Status>>,
        cancelled: watch::Receiver<bool>,
        work: AbortHandle,
    ) -> Self {
        Self {
            responses,
            interrupted: Box::pin(interrupted(cancelled)),
            work,
            ended: false,
        }
    }
}

impl<T> Stream for InterruptibleResponses<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if self.interrupted.as_mut().poll(cx).is_ready() {
            self.ended = true;
            self.work.abort();
            return Poll::Ready(Some(Err(ConnectError::cancelled().to_status())));
        }
        let next = Pin::new(&mut self.responses).poll_next(cx);
        if matches!(next, Poll::Ready(None)) {
            self.ended = true;
        }
        next
    }
}

impl<T> Drop for InterruptibleResponses<T> {
    fn drop(&mut self) {
        self.work.abort();
    }
}

/// Resolves when the operation is interrupted.
pub async fn interrupted(mut cancelled: watch::Receiver<bool>) {
    // An error means the session dropped the sender: the operation can no longer be
    // interrupted, so wait forever.
    if cancelled.wait_for(|cancelled| *cancelled).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use tokio::sync::mpsc;

    use super::*;

    #[tokio::test]
    async fn an_interrupt_ends_the_stream_while_the_work_is_still_running() {
        let (sender, receiver) = mpsc::channel::<Result<u32, Status>>(4);
        let (cancel, cancelled) = watch::channel(false);
        let work = tokio::spawn(async move {
            sender.send(Ok(1)).await.ok();
            std::future::pending::<()>().await;
        });
        let mut stream = InterruptibleResponses::new(
            ReceiverStream::new(receiver),
            cancelled,
            work.abort_handle(),
        );
        assert_eq!(stream.next().await.map(Result::unwrap), Some(1));
        cancel.send(true).unwrap();
        let status = stream.next().await.unwrap().unwrap_err();
        assert_eq!(status.code(), tonic::Code::Cancelled);
        assert!(status.message().contains("OPERATION_CANCELED"));
        assert!(stream.next().await.is_none());
        assert!(work.await.unwrap_err().is_cancelled());
    }

    #[tokio::test]
    async fn completed_work_ends_the_stream_without_an_error() {
        let (sender, receiver) = mpsc::channel::<Result<u32, Status>>(4);
        let (_cancel, cancelled) = watch::channel(false);
        let work = tokio::spawn(async move {
            sender.send(Ok(7)).await.ok();
        });
        let stream = InterruptibleResponses::new(
            ReceiverStream::new(receiver),
            cancelled,
            work.abort_handle(),
        );
        let items: Vec<u32> = stream.map(Result::unwrap).collect().await;
        assert_eq!(items, vec![7]);
    }
}
