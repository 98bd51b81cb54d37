// Package bus is sitebus's message bus on NATS JetStream.
//
// Services never touch acks, retries or dead letters themselves. A handler is
// a function of (ctx, typed message) returning an error; [Subscribe] wraps it
// with what a reliable consumer needs, in this order:
//
//   - decode the protobuf payload (undecodable → dead letter at once);
//   - extract the W3C trace context from the message headers and start a span;
//   - keep the message alive with InProgress while the handler runs;
//   - nil → Ack; a [Terminal] error → dead letter + Term; any other error →
//     NakWithDelay with exponential backoff, and after MaxDeliver attempts a
//     dead letter + Term.
//
// A dead letter is a copy of the message in the DLQ stream (subjects dlq.>)
// with headers saying why, where from and after how many tries; the copy is
// written before the original is terminated, so nothing is lost if the
// process dies in between.
package bus
