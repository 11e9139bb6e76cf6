"""synclog's Databricks target: `databricks+spark://CATALOG` in a cluster, `databricks://HOST` outside."""
