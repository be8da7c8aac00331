package org.beamcrawl.flink;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.beam.model.pipeline.v1.Endpoints.ApiServiceDescriptor;
import org.apache.beam.runners.flink.ClassPathJobInvoker;
import org.apache.beam.runners.flink.FlinkJobInvoker;
import org.apache.beam.runners.flink.FlinkJobServerDriver;
import org.apache.beam.runners.flink.FlinkJobServerDriver.FlinkServerConfiguration;
import org.apache.beam.runners.jobsubmission.JobServerDriver;
import org.apache.beam.sdk.fn.server.GrpcContextHeaderAccessorProvider;
import org.apache.beam.sdk.fn.server.ServerFactory;
import org.apache.beam.sdk.io.FileSystems;
import org.apache.beam.sdk.options.PipelineOptionsFactory;
import org.apache.beam.vendor.grpc.v1p60p1.io.grpc.BindableService;
import org.apache.beam.vendor.grpc.v1p60p1.io.grpc.Server;
import org.apache.beam.vendor.grpc.v1p60p1.io.grpc.ServerInterceptors;
import org.apache.beam.vendor.grpc.v1p60p1.io.grpc.netty.NettyServerBuilder;

/**
 * Beam's Flink job server, listening only on the address --job-host names.
 *
 * <p>Beam 2.62's own main class (FlinkJobServerDriver) creates the job service and the artifact
 * staging service with ServerFactory.createWithPortSupplier, whose gRPC servers are built with
 * NettyServerBuilder.forPort: they listen on every interface, and --job-host only becomes the
 * host part of the services' URLs. Whoever reaches those ports can submit a job, that is run
 * code. This class runs the same services (Beam's JobServerDriver with Beam's FlinkJobInvoker,
 * configured by the same command-line options) through a server factory that binds the host
 * of each service's URL, so `--job-host localhost` means loopback only and `--job-host 0.0.0.0`
 * every interface.
 *
 * <p>With the option {@value #CLASSES_ON_CLUSTER} (ours; the others are Beam's), the jobs carry no
 * jar: the cluster has the runner's classes in its class path (ClassPathJobInvoker).
 */
public final class BoundJobServer extends JobServerDriver {

  static final String CLASSES_ON_CLUSTER = "--classes-on-cluster";

  private BoundJobServer(FlinkServerConfiguration config, boolean classesOnCluster) {
    super(
        config,
        new BoundServerFactory(config.getHost(), config::getPort),
        new BoundServerFactory(config.getHost(), config::getArtifactPort),
        () -> classesOnCluster ? new ClassPathJobInvoker(config) : FlinkJobInvoker.create(config));
  }

  public static void main(String[] args) {
    List<String> beam = new ArrayList<>(Arrays.asList(args));
    boolean classesOnCluster = beam.remove(CLASSES_ON_CLUSTER);
    // The artifact staging service writes through Beam's file systems: register them first.
    FileSystems.setDefaultPipelineOptions(PipelineOptionsFactory.create());
    new BoundJobServer(
            FlinkJobServerDriver.parseArgs(beam.toArray(new String[0])), classesOnCluster)
        .run();
    // run() returns only once serving has failed (a port taken, say) or ended: exit, so that
    // whoever started this process sees it gone instead of a JVM that serves nothing.
    System.exit(1);
  }

  /** gRPC servers bound to one host. */
  static final class BoundServerFactory extends ServerFactory {
    private static final int KEEP_ALIVE_S = 20;   // what Beam's SDK clients are allowed to ping at

    private final String host;
    private final Supplier<Integer> port;

    BoundServerFactory(String host, Supplier<Integer> port) {
      this.host = host;
      this.port = port;
    }

    /** The job server calls this for a service configured with port 0 (any free port). */
    @Override
    public Server allocateAddressAndCreate(
        List<BindableService> services, ApiServiceDescriptor.Builder descriptor)
        throws IOException {
      Server server = start(services, new InetSocketAddress(host, port.get()));
      descriptor.setUrl(hostPort(host, server.getPort()));
      return server;
    }

    /** The job server calls this with the URL --job-host:port. */
    @Override
    public Server create(List<BindableService> services, ApiServiceDescriptor descriptor)
        throws IOException {
      String url = descriptor.getUrl();
      int colon = url.lastIndexOf(':');
      if (colon <= 0) {
        throw new IOException("expected host:port, got " + url);
      }
      String urlHost = url.substring(0, colon).replace("[", "").replace("]", "");
      int urlPort = Integer.parseInt(url.substring(colon + 1));
      return start(services, new InetSocketAddress(urlHost, urlPort));
    }

    private static Server start(List<BindableService> services, InetSocketAddress address)
        throws IOException {
      NettyServerBuilder builder =
          NettyServerBuilder.forAddress(address)
              // Beam's layers above bound what one message holds; gRPC must not cut it.
              .maxInboundMessageSize(Integer.MAX_VALUE)
              .permitKeepAliveTime(KEEP_ALIVE_S, TimeUnit.SECONDS);
      for (BindableService service : services) {
        // Beam's services read the worker id of a call from its headers through this.
        builder.addService(
            ServerInterceptors.intercept(service, GrpcContextHeaderAccessorProvider.interceptor()));
      }
      return builder.build().start();
    }

    private static String hostPort(String host, int port) {
      return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }
  }
}
