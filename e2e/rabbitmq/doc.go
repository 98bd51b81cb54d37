// Package rabbitmq runs a real, throw-away RabbitMQ node for end-to-end tests
// and talks to its management API.
//
// The node is the Debian rabbitmq-server package started as a child process
// (as user rabbitmq, which the Debian scripts require) with every listener
// on 127.0.0.1 and on ports chosen at start, so several test binaries can run
// brokers side by side. It enables the STOMP, Web-STOMP (path /rmqws-stomp,
// as Waldur deploys it) and management plugins.
package rabbitmq
