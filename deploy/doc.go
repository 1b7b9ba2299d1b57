// Package deploy is the example of scaling tpslice out: replicas of `tpslice serve` behind
// HAProxy, which checks each one's /health (haproxy.cfg, README.md). It has no code; its
// test runs the example and kills a replica under load.
package deploy
