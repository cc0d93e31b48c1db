// A throwaway Kerberos KDC for tests, built on Apache Kerby's SimpleKdcServer.
//
// Usage: java -cp <kerby jars>:<dir> LocalKdc <workdir> <realm> <principal>...
//
// Each principal gets a random key and its own keytab <workdir>/<name>.keytab
// ('/' in the name becomes '_'). A principal written "-name" gets a keytab but
// is then removed from the KDC, so tests can present a key the KDC does not
// know. The KDC listens on TCP only, on 127.0.0.1 and a port it picks; when
// everything is in place it writes the port to <workdir>/ready (through a
// rename, so a reader never sees half a file). It runs until SIGTERM; the
// launcher's process helpers also SIGKILL it if the owning Python dies.
import java.io.File;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.apache.kerby.kerberos.kerb.server.SimpleKdcServer;

public final class LocalKdc {
    private LocalKdc() {}

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return s.getLocalPort();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: LocalKdc <workdir> <realm> <principal>...");
            System.exit(2);
        }
        File work = new File(args[0]);
        String realm = args[1];
        SimpleKdcServer kdc = new SimpleKdcServer();
        kdc.setWorkDir(work);
        kdc.setKdcRealm(realm);
        kdc.setKdcHost("127.0.0.1");
        kdc.setAllowUdp(false);
        kdc.setAllowTcp(true);
        int port = freePort();
        kdc.setKdcTcpPort(port);
        kdc.init();
        for (int i = 2; i < args.length; i++) {
            boolean forget = args[i].startsWith("-");
            String name = forget ? args[i].substring(1) : args[i];
            String full = name + "@" + realm;
            kdc.createPrincipal(full);
            File keytab = new File(work, name.replace('/', '_') + ".keytab");
            kdc.exportPrincipal(full, keytab);
            if (forget) {
                kdc.deletePrincipal(full);
            }
        }
        kdc.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                kdc.stop();
            } catch (Exception e) {
                // exiting anyway
            }
        }));
        File tmp = new File(work, "ready.tmp");
        java.nio.file.Files.writeString(tmp.toPath(), Integer.toString(port));
        java.nio.file.Files.move(tmp.toPath(), new File(work, "ready").toPath(),
            java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        System.out.println("LocalKdc: ready on 127.0.0.1:" + port);
        System.out.flush();
        Thread.currentThread().join();
    }
}
