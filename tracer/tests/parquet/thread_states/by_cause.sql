SELECT pid, state, coalesce(syscall || coalesce(' (' || file || ')', ''), cause) AS what,
       count(*) AS intervals, round(sum(coalesce(blocked_ns, 0)) / 1e9, 3) AS blocked_s,
       round(sum(coalesce(runnable_ns, 0)) / 1e9, 3) AS runnable_s
FROM 'run.parquet/thread_states.parquet'
GROUP BY pid, state, what ORDER BY blocked_s + runnable_s DESC, pid, what;
