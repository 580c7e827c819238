/* Forced into every compile the runner makes (gpu_runner.compile_log.runner_options): the
 * identifier `dependency` may not appear after preprocessing, so a `#pragma GCC dependency`
 * built by macros (stringizing, token pasting, a toolkit macro around _Pragma) fails the
 * compile with "attempt to use poisoned" instead of telling whether a host file exists. */
#pragma GCC poison dependency
