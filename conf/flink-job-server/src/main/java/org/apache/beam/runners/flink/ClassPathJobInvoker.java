package org.apache.beam.runners.flink;

import java.util.Collections;
import org.apache.beam.runners.jobsubmission.JobInvocation;
import org.apache.beam.runners.jobsubmission.PortablePipelineRunner;
import org.apache.beam.model.pipeline.v1.RunnerApi;
import org.apache.beam.vendor.guava.v32_1_2_jre.com.google.common.util.concurrent.ListeningExecutorService;

/**
 * Beam's Flink job invoker, submitting jobs that carry no jar: for a cluster whose JobManager
 * and TaskManagers have the runner's classes in their own class path (`beamcrawl flink start`
 * runs them so: README "Running on Flink", docs/performance.md "Flink's fixed cost").
 *
 * <p>Beam's invoker hands Flink the job server's whole class path as the job's jars: its own
 * shaded jar, about 150 MB, uploaded through the JobManager's REST API for every job, written to
 * the JobManager's blob store, fetched by every TaskManager and opened by a class loader of the
 * job's own. With the classes already on the cluster, none of that is needed: a job without jars
 * resolves its classes from the class path. This class is in Beam's package only to read the
 * server configuration's Flink conf dir, which Beam keeps package-private.
 */
public final class ClassPathJobInvoker extends FlinkJobInvoker {

  private final FlinkJobServerDriver.FlinkServerConfiguration config;

  public ClassPathJobInvoker(FlinkJobServerDriver.FlinkServerConfiguration config) {
    super(config);
    this.config = config;
  }

  @Override
  protected JobInvocation createJobInvocation(
      String invocationId,
      String retrievalToken,
      ListeningExecutorService executorService,
      RunnerApi.Pipeline pipeline,
      FlinkPipelineOptions flinkOptions,
      PortablePipelineRunner pipelineRunner) {
    PortablePipelineRunner runner = pipelineRunner;
    if (pipelineRunner instanceof FlinkPipelineRunner) {      // not the jar writer
      runner =
          new FlinkPipelineRunner(
              flinkOptions, config.getFlinkConfDir(), Collections.<String>emptyList());
    }
    return super.createJobInvocation(
        invocationId, retrievalToken, executorService, pipeline, flinkOptions, runner);
  }
}
