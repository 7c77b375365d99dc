// The build goes into the server crate, committed and embedded in the binary (so `cargo run`
// needs no npm); CI rebuilds it and fails when it differs. File names carry no hash: the server
// serves these three files by name, and a byte-identical rebuild is the check.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/app/",
  build: {
    outDir: "../crates/server/ui/app",
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
    rollupOptions: {
      output: {
        entryFileNames: "app.js",
        chunkFileNames: "app-[name].js",
        assetFileNames: "app[extname]",
      },
    },
  },
});
