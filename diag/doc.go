// Package diag is tpslice's debug log, configured as NCCL's is: TPSLICE_DEBUG sets the
// level (WARN, INFO or TRACE; NCCL_DEBUG's names), TPSLICE_DEBUG_SUBSYS the subsystems
// (INIT, TUNING, GRAPH, COLL, FAULT or ALL, comma-separated; a leading ^ inverts the list,
// as NCCL_DEBUG_SUBSYS's does). A nil *Logger logs nothing, so code logs unconditionally
// and pays one nil check when debugging is off.
package diag
