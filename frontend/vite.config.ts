import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// Builds src/dashboard.ts into fixed-name files that Django serves as static
// assets: platform/static/build/dashboard.js (an ES module script, include it
// with <script type="module">) and platform/static/build/dashboard.css.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  publicDir: false,
  build: {
    outDir: "../platform/static/build",
    emptyOutDir: true,
    sourcemap: false,
    rolldownOptions: {
      input: "src/dashboard.ts",
      output: {
        entryFileNames: "dashboard.js",
        chunkFileNames: "dashboard-[name].js",
        assetFileNames: "dashboard[extname]",
      },
    },
  },
});
