// Package tp owns the tensor-parallel group: world size, rank workers, and sharding plans
// (which rows, columns and heads each rank owns; KV-head replication when kv_heads < tp).
package tp
