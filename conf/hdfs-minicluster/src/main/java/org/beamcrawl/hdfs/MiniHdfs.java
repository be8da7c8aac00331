package org.beamcrawl.hdfs;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;

/**
 * An HDFS of one NameNode and one DataNode for beamcrawl (`beamcrawl hdfs start`,
 * transforms/runners/localhdfs.py): Hadoop's MiniDFSCluster with every port bound to the
 * loopback address, its data kept under --base across restarts (formatted the first time only).
 *
 * Arguments: --base DIR --rpc-port N --http-port N --ready FILE. Once the NameNode is out of
 * safe mode and the DataNode has registered, writes FILE (JSON: the ports it listens on) and
 * runs until SIGTERM, when it shuts the cluster down.
 */
public final class MiniHdfs {
    private static final String LOOPBACK = "127.0.0.1";

    public static void main(String[] argv) throws Exception {
        // slf4j-simple: warnings, and MiniDFSCluster's own lines (before any logger exists)
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel",
                System.getProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn"));
        System.setProperty("org.slf4j.simpleLogger.log.org.apache.hadoop.hdfs.MiniDFSCluster",
                "info");
        System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        System.setProperty("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd HH:mm:ss.SSS");
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) {
            args.put(argv[i], argv[i + 1]);
        }
        File base = new File(required(args, "--base")).getAbsoluteFile();
        int rpcPort = Integer.parseInt(required(args, "--rpc-port"));
        int httpPort = Integer.parseInt(required(args, "--http-port"));
        File ready = new File(required(args, "--ready")).getAbsoluteFile();
        File formatted = new File(base, "formatted");

        Configuration conf = new HdfsConfiguration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getPath());
        conf.set("hadoop.tmp.dir", new File(base, "tmp").getPath());
        conf.setBoolean("dfs.permissions.enabled", false);
        conf.setInt("dfs.replication", 1);
        // Loopback only: the NameNode's RPC and HTTP (WebHDFS) ports, the DataNode's data, HTTP
        // and IPC ports (MiniDFSCluster sets the DataNode's to 127.0.0.1:0 itself too), and the
        // servers a MiniDFSCluster does not start, should a later Hadoop start them.
        conf.set("dfs.namenode.rpc-address", LOOPBACK + ":" + rpcPort);
        conf.set("dfs.namenode.http-address", LOOPBACK + ":" + httpPort);
        conf.set("dfs.namenode.https-address", LOOPBACK + ":0");
        conf.set("dfs.namenode.secondary.http-address", LOOPBACK + ":0");
        conf.set("dfs.namenode.secondary.https-address", LOOPBACK + ":0");
        conf.set("dfs.namenode.backup.address", LOOPBACK + ":0");
        conf.set("dfs.namenode.backup.http-address", LOOPBACK + ":0");
        conf.set("dfs.datanode.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.http.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.https.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.ipc.address", LOOPBACK + ":0");
        conf.set("dfs.datanode.hostname", LOOPBACK);   // where WebHDFS redirects reads and writes

        MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf, base)
                .numDataNodes(1)
                .nameNodePort(rpcPort)
                .nameNodeHttpPort(httpPort)
                .format(!formatted.exists())
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown, "shutdown"));
        cluster.waitActive();
        if (!formatted.exists()) {
            write(formatted, "formatted by MiniHdfs\n");
        }
        DataNode dataNode = cluster.getDataNodes().get(0);
        write(ready, "{\"rpc\": " + cluster.getNameNodePort()
                + ", \"http\": " + cluster.getNameNode().getHttpAddress().getPort()
                + ", \"datanode\": {\"data\": " + dataNode.getXferPort()
                + ", \"http\": " + dataNode.getInfoPort()
                + ", \"ipc\": " + dataNode.getIpcPort() + "}}\n");
        Thread.currentThread().join();     // until SIGTERM runs the shutdown hook
    }

    /** Writes a small file whole (a reader never sees half of it). */
    private static void write(File file, String text) throws Exception {
        File partial = new File(file.getPath() + ".partial");
        Files.write(partial.toPath(), text.getBytes(StandardCharsets.UTF_8));
        Files.move(partial.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE);
    }

    private static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            System.err.println("MiniHdfs: " + name + " is required");
            System.exit(2);
        }
        return value;
    }
}
