SELECT host, device, gpu_model, idle_basis,
       sum(idle_ns) AS idle_ns,
       sum(window_ns) AS window_ns,
       round(sum(idle_ns) / sum(window_ns), 4) AS idle_share
FROM read_parquet('fleet/*/idle_scopes.parquet')
WHERE scope_kind = 'gpu'
GROUP BY host, device, gpu_model, idle_basis
ORDER BY idle_share DESC, host, device;
