import './base.css';
import './jobs.css';
import './models.css';
import './hpo.css';
