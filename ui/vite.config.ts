/**
 * Build of the operator dashboard: `npm run build:ui` writes ui/dist, which the VNFM serves at /ui
 * (src/api/ui.ts). Preact's JSX through esbuild (no Babel), no module-preload polyfill (the page
 * runs no inline script: its Content-Security-Policy allows only its own files).
 */
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/ui/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  resolve: { alias: { react: 'preact/compat', 'react-dom': 'preact/compat' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: { proxy: { '^/(vnflcm|vnfpkgm|vnfm|v1\\.0|token)': 'http://127.0.0.1:9890' } },
});
