WITH leaf AS (
  SELECT stack_id, arg_min(function, depth) AS function, arg_min(file, depth) AS file,
         arg_min(line, depth) AS line
  FROM 'run.parquet/stacks.parquet' WHERE kind = 'python' GROUP BY stack_id)
SELECT coalesce(leaf.function || ' (' || leaf.file || ':' || leaf.line || ')', '(no Python frame)') AS code,
       count(*) AS launches
FROM 'run.parquet/launches.parquet' AS l LEFT JOIN leaf ON leaf.stack_id = l.stack
GROUP BY code ORDER BY launches DESC, code;
