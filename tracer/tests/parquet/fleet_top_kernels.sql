SELECT kernel,
       count(*) AS launches,
       count(DISTINCT host) AS hosts
FROM read_parquet('fleet/*/launches.parquet')
WHERE NOT failed AND kernel IS NOT NULL
GROUP BY kernel
ORDER BY launches DESC, kernel
LIMIT 10;
