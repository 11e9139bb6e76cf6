package synclog.harness;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.catalog.DelegatingCatalogExtension;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Another name for the session catalog, so that {@code census.census.sync_log} resolves on local
 * Spark as {@code spark_catalog.census.sync_log} does (see DATABRICKS_NOTES.md beside this file).
 *
 * <p>Register it once per catalog name: {@code spark.sql.catalog.census=synclog.harness.SessionCatalogAlias}.
 * {@link DelegatingCatalogExtension#name()} answers with the delegate's name, {@code spark_catalog},
 * so Spark treats every alias as the session catalog and runs its v1 commands (partitions, views,
 * ALTER TABLE, INSERT OVERWRITE) unchanged. All aliases share the session catalog's databases.
 */
public final class SessionCatalogAlias extends DelegatingCatalogExtension {
  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    org.apache.spark.sql.classic.SparkSession spark =
        (org.apache.spark.sql.classic.SparkSession) SparkSession.active();
    setDelegateCatalog(spark.sessionState().catalogManager().catalog("spark_catalog"));
  }
}
